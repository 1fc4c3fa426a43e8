/**
 * The service worker's stand-in for the reader's load recorder (core/read/load/load-recorder.ts):
 * recorded loads (SPEC §6 "Loads") are posted by the page's adapters to a development server,
 * never by the service worker, so it keeps no record. webpack.config.cjs puts it in place of
 * that module. The names and the check of a load's name are the recorder's own.
 */
import { InvalidOptionError } from '../../core/errors.js';
import type { LoadsFile } from '../../core/publish/loads.js';

export { DEFAULT_LOAD_NAME, LOADS_ENDPOINT_HEADER, loadsEndpointOf } from '../../core/read/load/load-names.js';

export class LoadRecorder {
  readonly enabled = false;

  /** Checks the name, as the recorder does; records nothing. */
  record(name: string | undefined): void {
    if (name !== undefined && (typeof name !== 'string' || name === ''))
      throw new InvalidOptionError('loadName', `loadName must be a non-empty string, got ${JSON.stringify(name)}`);
  }

  loadsFile(): LoadsFile {
    return { formatVersion: 1, loads: [] };
  }

  async post(): Promise<boolean> {
    return false;
  }
}
