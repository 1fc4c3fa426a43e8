/**
 * Streamed members (SPEC §7): stream-check.ts, with `BundleStreamVerifier`, the checker that
 * judges a refused head at once (structure.ts), for Node and the tests. The reader's page and
 * worker use stream-check.ts and judge a refused head only once it is refused (`deferredJudge`).
 */
import { judgeHead } from './structure.js';
import { BundleStreamChecker, type BundleStreamPlan, type Hasher, type StreamSink } from './stream-check.js';

export * from './stream-check.js';
export { judgeHead } from './structure.js';

/** `BundleStreamChecker` judging a refused head here (`judgeHead`): on the page, and in Node. */
export class BundleStreamVerifier extends BundleStreamChecker {
  constructor(plan: BundleStreamPlan, hash: Hasher, sink: StreamSink) {
    super(plan, hash, sink, (head) => judgeHead(plan, head));
  }
}
