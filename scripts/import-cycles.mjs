// Import circles between the project's own TypeScript modules: reads every .ts file
// under core/, adapters/, cli/ and integrations/, takes the relative specifiers of
// `import … from`, `import '…'`, `export … from` and `import('…')` (a `.js` specifier names the
// `.ts` file beside it), and prints each circle that passes through a file in the folders asked
// about (all of them when none are named). Exits 1 when it finds one.
//
//   node scripts/import-cycles.mjs [--json] [folder …]
//
// Type-only imports (`import type`, `typeof import('…')`) count: they vanish at runtime, but a
// circle of types is still two modules that each need the other to be understood. A lazy
// `import()` counts too: it splits the code, not the design. No dependency: a small tokenizer
// that knows comments, strings, template literals and regular expressions is enough to find the
// specifiers without mistaking an example in a comment for an import.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const SOURCE_FOLDERS = ['core', 'adapters', 'cli', 'integrations'];
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'build', 'test', 'examples', 'bench']);

/** After one of these a `/` starts a regular expression, not a division. */
const KEYWORDS_BEFORE_EXPRESSION = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

/** Identifiers, strings and punctuation of one file, without comments or template text. */
export function tokenize(text) {
  const tokens = [];
  // One entry per open `${`: the brace depth at which its template literal resumes.
  const templateDepths = [];
  let braceDepth = 0;
  let index = 0;
  const previous = () => tokens[tokens.length - 1];
  const startsRegExp = () => {
    const last = previous();
    if (!last) return true;
    if (last.kind === 'identifier') return KEYWORDS_BEFORE_EXPRESSION.has(last.value);
    if (last.kind === 'string' || last.kind === 'template') return false;
    return !/^[)\]}]$/.test(last.value);
  };
  const skipTemplateText = () => {
    // `index` is just past a backtick or a template's closing `}`.
    while (index < text.length) {
      const char = text[index];
      if (char === '\\') index += 2;
      else if (char === '`') {
        index += 1;
        tokens.push({ kind: 'template', value: '`' });
        return;
      } else if (char === '$' && text[index + 1] === '{') {
        index += 2;
        templateDepths.push(braceDepth);
        braceDepth += 1;
        return;
      } else index += 1;
    }
  };
  while (index < text.length) {
    const char = text[index];
    const next = text[index + 1];
    if (/\s/.test(char)) index += 1;
    else if (char === '/' && next === '/') index = lineEnd(text, index);
    else if (char === '/' && next === '*') index = text.indexOf('*/', index + 2) < 0 ? text.length : text.indexOf('*/', index + 2) + 2;
    else if (char === "'" || char === '"') {
      const start = index;
      index += 1;
      while (index < text.length && text[index] !== char && text[index] !== '\n') index += text[index] === '\\' ? 2 : 1;
      index += 1;
      tokens.push({ kind: 'string', value: text.slice(start + 1, index - 1) });
    } else if (char === '`') {
      index += 1;
      skipTemplateText();
    } else if (char === '/' && startsRegExp()) {
      index = regExpEnd(text, index);
      tokens.push({ kind: 'regexp', value: '/' });
    } else if (/[\w$]/.test(char)) {
      const start = index;
      while (index < text.length && /[\w$]/.test(text[index])) index += 1;
      tokens.push({ kind: 'identifier', value: text.slice(start, index) });
    } else {
      index += 1;
      if (char === '{') braceDepth += 1;
      if (char === '}') {
        braceDepth -= 1;
        if (templateDepths.length > 0 && templateDepths[templateDepths.length - 1] === braceDepth) {
          templateDepths.pop();
          skipTemplateText();
          continue;
        }
      }
      tokens.push({ kind: 'punctuation', value: char });
    }
  }
  return tokens;
}

function lineEnd(text, index) {
  const end = text.indexOf('\n', index);
  return end < 0 ? text.length : end;
}

function regExpEnd(text, start) {
  let index = start + 1;
  let inClass = false;
  while (index < text.length && text[index] !== '\n') {
    const char = text[index];
    if (char === '\\') index += 2;
    else {
      if (char === '[') inClass = true;
      else if (char === ']') inClass = false;
      else if (char === '/' && !inClass) break;
      index += 1;
    }
  }
  index += 1;
  while (index < text.length && /[a-z]/i.test(text[index])) index += 1;
  return index;
}

/** Tokens that may stand between `import`/`export` and `from`. */
const CLAUSE_TOKENS = new Set(['{', '}', ',', '*']);

/**
 * The specifiers one file imports: `{ specifier, typeOnly, lazy }` for each `import … from`,
 * `import '…'`, `export … from` and `import('…')`.
 */
export function importsOf(text) {
  const tokens = tokenize(text);
  const found = [];
  for (let at = 0; at < tokens.length; at += 1) {
    const token = tokens[at];
    if (token.kind !== 'identifier' || (token.value !== 'import' && token.value !== 'export')) continue;
    const before = tokens[at - 1];
    if (before && before.kind === 'punctuation' && before.value === '.') continue; // `x.import`
    const after = tokens[at + 1];
    if (!after) continue;
    if (token.value === 'import' && after.value === '(' && tokens[at + 2]?.kind === 'string') {
      const typeOnly = before?.kind === 'identifier' && before.value === 'typeof';
      found.push({ specifier: tokens[at + 2].value, typeOnly, lazy: !typeOnly });
      continue;
    }
    if (token.value === 'import' && after.kind === 'string') {
      found.push({ specifier: after.value, typeOnly: false, lazy: false });
      continue;
    }
    // A clause: `type`? then names, braces, commas, `* as x`, ending at `from '…'`.
    const clause = [];
    let end = at + 1;
    while (end < tokens.length) {
      const candidate = tokens[end];
      if (candidate.kind === 'identifier' && candidate.value === 'from' && tokens[end + 1]?.kind === 'string') break;
      const nextStatement = candidate.kind === 'identifier' && (candidate.value === 'import' || candidate.value === 'export');
      if ((candidate.kind === 'identifier' && !nextStatement) || (candidate.kind === 'punctuation' && CLAUSE_TOKENS.has(candidate.value))) {
        clause.push(candidate);
        end += 1;
      } else {
        end = -1;
        break;
      }
    }
    if (end < 0 || end >= tokens.length || clause.length === 0) continue;
    if (token.value === 'export' && !clause.some((part) => part.value === '{' || part.value === '*')) continue;
    found.push({ specifier: tokens[end + 1].value, typeOnly: isTypeOnlyClause(clause), lazy: false });
    at = end + 1;
  }
  return found;
}

/** `type { A }`, `type A`, or `{ type A, type B }`: nothing of it is left at runtime. */
function isTypeOnlyClause(clause) {
  if (clause[0].value === 'type' && clause.length > 1) return true;
  const names = [];
  let typed = false;
  for (const part of clause) {
    if (part.kind === 'punctuation') {
      if (part.value === ',' || part.value === '}') {
        if (names.length > 0 && !typed) return false;
        names.length = 0;
        typed = false;
      } else if (part.value === '*') return false;
    } else if (part.value === 'type' && names.length === 0) typed = true;
    else names.push(part.value);
  }
  // A default import (`import x, { type Y }`) is a value.
  return clause[0].value === '{' && !(names.length > 0 && !typed);
}

/** The .ts file a relative specifier names, or undefined when it names none. */
export function resolveSpecifier(fromFile, specifier) {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined;
  const target = path.resolve(path.dirname(fromFile), specifier);
  const candidates = [
    target.replace(/\.js$/, '.ts'),
    target.replace(/\.mjs$/, '.mts'),
    target.replace(/\.jsx$/, '.tsx'),
    target,
    `${target}.ts`,
    path.join(target, 'index.ts'),
  ];
  return candidates.find((candidate) => /\.(ts|mts|tsx)$/.test(candidate) && existsSync(candidate) && statSync(candidate).isFile());
}

function listSources(folder) {
  if (!existsSync(folder)) return [];
  const files = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_FOLDERS.has(entry.name)) files.push(...listSources(full));
    } else if (/\.(ts|mts|tsx)$/.test(entry.name) && !/\.d\.ts$/.test(entry.name)) files.push(full);
  }
  return files;
}

/** `file → [{ to, typeOnly, lazy }]` over the repository's sources, paths relative to `repo`. */
export function importGraph(repo = REPO) {
  const graph = new Map();
  const relative = (file) => path.relative(repo, file).split(path.sep).join('/');
  for (const file of SOURCE_FOLDERS.flatMap((folder) => listSources(path.join(repo, folder)))) {
    const edges = [];
    for (const { specifier, typeOnly, lazy } of importsOf(readFileSync(file, 'utf8'))) {
      const target = resolveSpecifier(file, specifier);
      if (target) edges.push({ to: relative(target), typeOnly, lazy });
    }
    graph.set(relative(file), edges);
  }
  return graph;
}

/** Tarjan's strongly connected components with more than one file (or a file importing itself). */
export function stronglyConnected(graph) {
  const order = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  let counter = 0;
  const visit = (file) => {
    // Iterative, so a long chain of imports cannot overflow the call stack.
    const work = [{ file, edge: 0 }];
    order.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const edges = graph.get(frame.file) ?? [];
      if (frame.edge < edges.length) {
        const { to } = edges[frame.edge];
        frame.edge += 1;
        if (!graph.has(to)) continue;
        if (!order.has(to)) {
          order.set(to, counter);
          low.set(to, counter);
          counter += 1;
          stack.push(to);
          onStack.add(to);
          work.push({ file: to, edge: 0 });
        } else if (onStack.has(to)) low.set(frame.file, Math.min(low.get(frame.file), order.get(to)));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].file;
        low.set(parent, Math.min(low.get(parent), low.get(frame.file)));
      }
      if (low.get(frame.file) === order.get(frame.file)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.file);
        const selfImport = (graph.get(frame.file) ?? []).some((edge) => edge.to === frame.file);
        if (component.length > 1 || selfImport) components.push(component.sort());
      }
    }
  };
  for (const file of [...graph.keys()].sort()) if (!order.has(file)) visit(file);
  return components;
}

/** The shortest circle through `start` inside `members`, as files, `start` first. */
function shortestCycleThrough(graph, start, members) {
  const cameFrom = new Map();
  const queue = [start];
  for (let head = 0; head < queue.length; head += 1) {
    const file = queue[head];
    for (const { to } of graph.get(file) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const cycle = [file];
        while (cycle[0] !== start) cycle.unshift(cameFrom.get(cycle[0]));
        return cycle;
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, file);
        queue.push(to);
      }
    }
  }
  return [start];
}

/** The same circle, started at its smallest file, so that rotations compare equal. */
function canonical(cycle) {
  const smallest = cycle.indexOf([...cycle].sort()[0]);
  return [...cycle.slice(smallest), ...cycle.slice(0, smallest)];
}

/**
 * Circles through files in `folders` (paths relative to the repository; every file when empty):
 * for each strongly connected set of files, the shortest circle through each of its files, with
 * how each step imports: `value`, else `type` (type-only imports), `lazy` (`import()`) or `type, lazy`.
 */
export function importCycles({ repo = REPO, folders = [] } = {}) {
  const graph = importGraph(repo);
  const within = (file) =>
    folders.length === 0 || folders.some((folder) => file === folder || file.startsWith(`${folder.replace(/\/$/, '')}/`));
  const cycles = [];
  const seen = new Set();
  for (const component of stronglyConnected(graph)) {
    if (!component.some(within)) continue;
    const members = new Set(component);
    for (const file of component) {
      const cycle = canonical(shortestCycleThrough(graph, file, members));
      const key = cycle.join(' ');
      if (seen.has(key)) continue;
      seen.add(key);
      const steps = cycle.map((from, step) => {
        const to = cycle[(step + 1) % cycle.length];
        const edges = graph.get(from).filter((edge) => edge.to === to);
        // `value` when one import of the step stays at runtime and loads with its importer; else what they are.
        const kinds = ['type', 'lazy'].filter((kind) => edges.some((edge) => (kind === 'type' ? edge.typeOnly : edge.lazy)));
        const how = edges.some((edge) => !edge.typeOnly && !edge.lazy) ? 'value' : kinds.join(', ');
        return { from, to, how };
      });
      cycles.push({ files: cycle, steps });
    }
  }
  return cycles;
}

/** One line per circle: `a.ts → b.ts (type) → a.ts`. */
export function describeCycle({ files, steps }) {
  return [files[0], ...steps.map(({ to, how }) => (how === 'value' ? to : `${to} (${how})`))].join(' → ');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const folders = args.filter((arg) => arg !== '--json').map((folder) => folder.replace(/\/$/, ''));
  const cycles = importCycles({ folders });
  if (json) process.stdout.write(`${JSON.stringify(cycles, null, 2)}\n`);
  else if (cycles.length === 0) process.stdout.write(`No import circles${folders.length > 0 ? ` through ${folders.join(', ')}` : ''}.\n`);
  else for (const cycle of cycles) process.stdout.write(`${describeCycle(cycle)}\n`);
  process.exitCode = cycles.length === 0 ? 0 : 1;
}
