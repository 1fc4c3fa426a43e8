/** Jest runs the TypeScript sources through ts-jest as CommonJS; type checking is `tsc --noEmit`. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.[tj]sx?$': ['ts-jest', { tsconfig: { module: 'commonjs', moduleResolution: 'bundler', isolatedModules: true, allowJs: true, esModuleInterop: true, ignoreDeprecations: '6.0' } }] },
  transformIgnorePatterns: ['/node_modules/(?!(@noble|@babylonjs)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 60000,
};
