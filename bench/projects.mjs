// Generated bench projects, shared by bench/reader.mjs and bench/delta.mjs: paths and sizes
// from a seed alone (xorshift32), so every script builds the same project from the same seed.
const KiB = 1024;
const MiB = 1024 * KiB;
const MB = 1e6;

/** xorshift32, as in the other benchmarks: repeatable, incompressible bytes. */
export function random(seed) {
  let state = seed >>> 0 || 1;
  const next = () => ((state ^= state << 13), (state ^= state >>> 17), (state ^= state << 5), state >>> 0);
  const unit = () => next() / 2 ** 32;
  return {
    next,
    unit,
    logUniform: (min, max) => Math.round(min * Math.pow(max / min, unit())),
    pick: (choices) => {
      let left = unit();
      for (const choice of choices) if ((left -= choice.share) < 0) return choice;
      return choices[choices.length - 1];
    },
    fill(bytes) {
      const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
      for (let i = 0; i < words.length; i++) words[i] = next();
      for (let i = words.length * 4; i < bytes.length; i++) bytes[i] = next() & 0xff;
      return bytes;
    },
  };
}

// About 75% of 1–16 KB, 23% of 16–128 KB, 2% of 256 KB–1 MB; folders and types of a 2D scene.
export const SCENE_CLASSES = [
  {
    share: 0.75,
    min: 1 * KiB,
    max: 16 * KiB,
    kinds: [
      { share: 0.5, folder: 'sprites', ext: 'png' },
      { share: 0.2, folder: 'ui', ext: 'png' },
      { share: 0.3, folder: 'data', ext: 'json' },
    ],
  },
  {
    share: 0.23,
    min: 16 * KiB,
    max: 128 * KiB,
    kinds: [
      { share: 0.6, folder: 'tiles', ext: 'png' },
      { share: 0.4, folder: 'sfx', ext: 'ogg' },
    ],
  },
  {
    share: 0.02,
    min: 256 * KiB,
    max: 1 * MiB,
    kinds: [
      { share: 0.5, folder: 'music', ext: 'ogg' },
      { share: 0.5, folder: 'atlases', ext: 'png' },
    ],
  },
];
export const BIG_KINDS = [
  { share: 0.45, folder: 'textures', ext: 'ktx2' },
  { share: 0.3, folder: 'models', ext: 'glb' },
  { share: 0.2, folder: 'audio', ext: 'ogg' },
  { share: 0.05, folder: 'video', ext: 'webm' },
];

export const GLB_KIND = { folder: 'models', ext: 'glb' };

/** Paths and sizes of a project, from its seed alone. */
export function planProject(spec) {
  const rng = random(spec.seed);
  const files = [];
  for (let i = 0; i < spec.files; i++) {
    let size, kind;
    if (spec.shape === 'scene') {
      const sizeClass = rng.pick(SCENE_CLASSES);
      size = rng.logUniform(sizeClass.min, sizeClass.max);
      kind = rng.pick(sizeClass.kinds);
    } else {
      // 0.2–8 MB, skewed towards the small end (0.2 MB × 40^(u²)); scaled to 250 MB below.
      size = 0.2 * MB * Math.pow(40, rng.unit() ** 2);
      kind = rng.pick(BIG_KINDS);
      // The same draws as the big project, so the glb project has its sizes.
      if (spec.shape === 'glb') kind = GLB_KIND;
    }
    const set = `set${rng.next() % 6}`;
    files.push({ path: `${kind.folder}/${set}/${kind.folder}-${String(i).padStart(4, '0')}.${kind.ext}`, size });
  }
  if (spec.totalBytes) {
    const scale = spec.totalBytes / files.reduce((sum, file) => sum + file.size, 0);
    for (const file of files) file.size = Math.min(spec.maxBytes, Math.max(spec.minBytes, file.size * scale));
  }
  for (const file of files) file.size = Math.round(file.size);
  return files;
}
