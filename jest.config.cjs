/**
 * Jest runs the TypeScript sources through ts-jest as CommonJS; type checking is `tsc --noEmit`.
 * `AWKB_QUICK=1 npx jest` leaves out the slow suites (README "Testing") for a quick local loop;
 * `npm test` and CI run everything.
 */
const SLOW_SUITES = [
  'package.test.ts', // npm pack and install into a new project
  'types.test.ts', // a second TypeScript compiler over every entry
  'crash-publish.test.ts', // publishes killed with SIGKILL
  'example.test.ts',
  'phaser-example.test.ts',
  'babylon-example.test.ts', // webpack builds of the examples
  'examples-dev.test.ts',
  'webpack-plugin.test.ts', // webpack builds and webpack serve
  'vite-plugin.test.ts', // vite builds, vite and vite preview, the Phaser example in Chromium
];
const quick = /^(1|true|yes)$/i.test(process.env.AWKB_QUICK ?? '');

module.exports = {
  testPathIgnorePatterns: ['/node_modules/', ...(quick ? SLOW_SUITES.map((name) => `/test/${name.replace(/\./g, '\\.')}$`) : [])],
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.[tj]sx?$': [
      'ts-jest',
      {
        tsconfig: {
          module: 'commonjs',
          moduleResolution: 'bundler',
          isolatedModules: true,
          allowJs: true,
          esModuleInterop: true,
          ignoreDeprecations: '6.0',
        },
      },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!(@noble|@babylonjs)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 60000,
};
