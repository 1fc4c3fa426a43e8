/**
 * An `XMLHttpRequest` look-alike that answers from a registration instead of the network, for
 * the one `WebRequest` whose URL maps into an index. Babylon's `WebRequest` wraps one XHR and
 * only uses what is implemented here (webRequest.js); `RequestFile` listens to `progress`,
 * `readystatechange` and `loadend` (fileTools.pure.js).
 *
 * A failure answers as an HTTP error with a non-zero status (so Babylon's retry strategy, which
 * retries status 0, does not fetch a damaged bundle again) and a `statusText` that names the
 * member: Babylon puts `statusText` into the error its loaders report.
 */
import { AwakeError, HttpError } from '../../core/errors.js';
import { mediaTypeOf } from '../../core/format/media-types.js';
import type { LiveTarget } from './live-registrations.js';

/** The status a failure other than an HTTP error answers with: the bundle behind the URL was bad. */
const FAILED_STATUS = 502;

export class BundleRequest extends EventTarget {
  readyState = 0;
  status = 0;
  statusText = '';
  response: unknown = null;
  responseText = '';
  responseType: XMLHttpRequestResponseType = '';
  responseURL = '';
  timeout = 0;
  withCredentials = false;
  onprogress: ((event: ProgressEvent) => void) | null = null;
  /** The error a failed load ended with (the member it names is also in `statusText`). */
  error: unknown = undefined;
  private readonly target: LiveTarget;
  private readonly controller = new AbortController();
  private readonly headers = new Map<string, string>();
  private contentLength = 0;

  constructor(target: LiveTarget) {
    super();
    this.target = target;
  }

  open(): void {
    this.readyState = 1;
    this.dispatchEvent(new Event('readystatechange'));
  }

  setRequestHeader(name: string, value: string): void {
    this.headers.set(name.toLowerCase(), value);
  }

  getResponseHeader(name: string): string | null {
    if (this.readyState < 2) return null;
    const lower = name.toLowerCase();
    if (lower === 'content-type') return mediaTypeOf(this.target.path);
    if (lower === 'content-length') return String(this.contentLength);
    return null;
  }

  getAllResponseHeaders(): string {
    return this.readyState < 2 ? '' : `content-type: ${mediaTypeOf(this.target.path)}\r\ncontent-length: ${this.contentLength}\r\n`;
  }

  overrideMimeType(): void {}

  send(): void {
    void this.answer();
  }

  abort(): void {
    if (this.readyState === 4 || this.readyState === 0) return;
    this.controller.abort();
    this.readyState = 4;
    this.status = 0;
    this.dispatchEvent(new Event('readystatechange'));
    this.finish('abort');
  }

  private async answer(): Promise<void> {
    const { registration, path, url } = this.target;
    let bytes: Uint8Array;
    try {
      bytes = await registration.read(path, {
        signal: this.controller.signal,
        onProgress: (loaded, total) => this.progress(loaded, total),
      });
    } catch (error) {
      if (this.controller.signal.aborted) return;
      this.error = error;
      this.respond(
        error instanceof HttpError && error.status > 0 ? error.status : FAILED_STATUS,
        describe(error, path),
        new Uint8Array(0),
        url,
      );
      return;
    }
    if (this.controller.signal.aborted) return;
    const range = parseRange(this.headers.get('range'), bytes.length);
    if (range) this.respond(206, 'Partial Content', bytes.subarray(range[0], range[1] + 1), url);
    else this.respond(200, 'OK', bytes, url);
  }

  private respond(status: number, statusText: string, bytes: Uint8Array, url: string): void {
    this.status = status;
    this.statusText = statusText;
    this.responseURL = url;
    this.contentLength = bytes.length;
    this.readyState = 2;
    this.dispatchEvent(new Event('readystatechange'));
    this.setBody(bytes);
    this.readyState = 4;
    this.dispatchEvent(new Event('readystatechange'));
    this.finish('load');
  }

  private setBody(bytes: Uint8Array): void {
    // The read's buffer is ours (the reader hands every read a buffer of its own); copy only a view into a larger one.
    const buffer =
      bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
        ? (bytes.buffer as ArrayBuffer)
        : (bytes.slice().buffer as ArrayBuffer);
    switch (this.responseType) {
      case 'arraybuffer':
        this.response = buffer;
        break;
      case 'blob':
        this.response = new Blob([buffer], { type: mediaTypeOf(this.target.path) });
        break;
      case 'json':
        try {
          this.response = JSON.parse(new TextDecoder().decode(buffer));
        } catch {
          this.response = null;
        }
        break;
      default:
        this.responseText = new TextDecoder().decode(buffer);
        this.response = this.responseText;
    }
  }

  private progress(loaded: number, total: number): void {
    const event = progressEvent('progress', loaded, total);
    this.onprogress?.(event);
    this.dispatchEvent(event);
  }

  private finish(type: 'load' | 'abort'): void {
    this.dispatchEvent(progressEvent(type, this.contentLength, this.contentLength));
    this.dispatchEvent(progressEvent('loadend', this.contentLength, this.contentLength));
  }
}

/** A `ProgressEvent`, or an `Event` with its fields where there is none (Node, with NullEngine). */
function progressEvent(type: string, loaded: number, total: number): ProgressEvent {
  if (typeof ProgressEvent === 'function') return new ProgressEvent(type, { lengthComputable: true, loaded, total });
  return Object.assign(new Event(type), { lengthComputable: true, loaded, total }) as ProgressEvent;
}

/** One line that says which file failed and why; an AwakeError already names the bundle and damaged members. */
export function describe(error: unknown, path: string): string {
  const full = error instanceof Error ? error.message : String(error);
  // An error that starts with the path (a load disposed while it ran) names it once.
  const message = full.startsWith(`${path}: `) ? full.slice(path.length + 2) : full;
  const name = error instanceof AwakeError ? `${error.name} (${error.code})` : 'error';
  return `awake-bundle could not serve ${path}: ${name}: ${message}`;
}

/**
 * One `bytes=a-b` range as [first, last]; anything else is the whole file. Linear: the one
 * regular expression is anchored and its parts cannot overlap. Exported for the fuzz tests only.
 */
export function parseRange(header: string | undefined, size: number): [number, number] | undefined {
  const match = header === undefined ? null : /^bytes=(\d+)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  return start <= end ? [start, end] : undefined;
}
