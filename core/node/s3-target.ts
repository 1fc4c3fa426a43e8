/**
 * S3 (and S3-compatible stores: MinIO, R2, Spaces…) as a `PublishTarget`. `@aws-sdk/client-s3`
 * is an optional peer dependency, loaded with `import()` only when an S3 target is used.
 * Credentials and region come from the SDK's default chain (environment, shared config and
 * credentials files, a profile, SSO, instance roles) unless a client is given.
 */
import type * as S3Sdk from '@aws-sdk/client-s3';
import { open, readFile } from 'node:fs/promises';
import { InvalidOptionError, PublishOutputError, UnsupportedOperationError } from '../errors.js';
import { mediaTypeOf } from '../format/media-types.js';
import { forEachAtMost, type PublishTarget, type TargetBundle } from './publish-target.js';

/** Bundles are named by their SHA-256: their bytes never change under a name. */
export const BUNDLE_CACHE_CONTROL = 'public, max-age=31536000, immutable';
/** The index changes with every publish: caches must ask again. */
export const INDEX_CACHE_CONTROL = 'no-cache';

const MiB = 1024 * 1024;
/** S3's smallest part (but the last). */
const MIN_PART_BYTES = 5 * MiB;

export interface S3PublishTargetOptions {
  bucket: string;
  /** Key prefix the project goes under (`games/harbor` → `games/harbor/project.index.json`). */
  prefix?: string;
  /**
   * A client of your own (an `S3Client`); otherwise one is made from `endpoint`, `region` and
   * `forcePathStyle`, with the SDK's default credential chain.
   */
  client?: { send(command: unknown): Promise<unknown> };
  /** An S3-compatible store's URL (`http://127.0.0.1:9000`). */
  endpoint?: string;
  /** Default: the SDK's chain (AWS_REGION, the profile); `us-east-1` with an `endpoint` when it finds none. */
  region?: string;
  /** Bucket in the path, not the host name. Default: true with an `endpoint`. */
  forcePathStyle?: boolean;
  /** Bundles larger than this go up in parts (default 16 MiB). */
  multipartThresholdBytes?: number;
  /** Part size of a multipart upload, at least 5 MiB (default 8 MiB). */
  partSizeBytes?: number;
  /** How the SDK is loaded; for tests. Default: `import('@aws-sdk/client-s3')`. */
  loadSdk?: () => Promise<unknown>;
}

/** `s3://bucket/some/prefix` → bucket and prefix; undefined when `url` is not an s3 URL. */
export function parseS3Url(url: string): { bucket: string; prefix: string } | undefined {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (!match) return undefined;
  return { bucket: match[1]!, prefix: match[2]!.replace(/^\/+|\/+$/g, '') };
}

const SDK_PACKAGE = '@aws-sdk/client-s3';

/** Loads the SDK, or says which package to install. */
async function loadS3Sdk(load: () => Promise<unknown> = () => import('@aws-sdk/client-s3')): Promise<typeof S3Sdk> {
  try {
    return (await load()) as typeof S3Sdk;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes(SDK_PACKAGE)) {
      throw new UnsupportedOperationError(`publishing to S3 needs the package ${SDK_PACKAGE}: run npm install --save-dev ${SDK_PACKAGE}`, {
        cause: error,
      });
    }
    throw error;
  }
}

interface S3Failure {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

export class S3PublishTarget implements PublishTarget {
  readonly location: string;
  readonly bucket: string;
  readonly prefix: string;
  private readonly options: S3PublishTargetOptions;
  private readonly multipartThresholdBytes: number;
  private readonly partSizeBytes: number;
  private connection: Promise<{ sdk: typeof S3Sdk; client: { send(command: unknown): Promise<unknown> } }> | undefined;

  /** `S3PublishTarget.fromUrl('s3://bucket/prefix', { endpoint })`. */
  static fromUrl(url: string, options: Omit<S3PublishTargetOptions, 'bucket' | 'prefix'> = {}): S3PublishTarget {
    const parsed = parseS3Url(url);
    if (!parsed) throw new InvalidOptionError('url', `${JSON.stringify(url)} is not an s3://bucket/prefix URL`);
    return new S3PublishTarget({ ...options, ...parsed });
  }

  constructor(options: S3PublishTargetOptions) {
    if (!options.bucket) throw new InvalidOptionError('bucket', 'bucket must not be empty');
    this.options = options;
    this.bucket = options.bucket;
    this.prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.location = `s3://${this.bucket}${this.prefix ? `/${this.prefix}` : ''}`;
    this.multipartThresholdBytes = options.multipartThresholdBytes ?? 16 * MiB;
    this.partSizeBytes = options.partSizeBytes ?? 8 * MiB;
    if (!(Number.isSafeInteger(this.partSizeBytes) && this.partSizeBytes >= MIN_PART_BYTES)) {
      throw new InvalidOptionError(
        'partSizeBytes',
        `partSizeBytes must be an integer of at least ${MIN_PART_BYTES} (S3's smallest part), got ${this.partSizeBytes}`,
      );
    }
  }

  /** The object key of a key relative to the project root. */
  objectKey(key: string): string {
    return this.prefix ? `${this.prefix}/${key}` : key;
  }

  /**
   * One listing per bundle folder (usually one: `bundles/`): an object of the bundle's size under
   * its name is the bundle. S3 makes an object visible only once it is complete (a PUT, or a
   * multipart upload's Complete), so a half-sent bundle never looks held. Without ListBucket
   * permission, each bundle is asked for with HEAD instead.
   */
  async existing(bundles: readonly TargetBundle[]): Promise<Set<string>> {
    await this.connect(); // a missing SDK is reported as such, not as a failed listing
    try {
      return await this.existingByListing(bundles);
    } catch (error) {
      if ((error as S3Failure).$metadata?.httpStatusCode !== 403) throw this.failure('list', this.objectKey(''), error);
      return this.existingByHead(bundles);
    }
  }

  private async existingByListing(bundles: readonly TargetBundle[]): Promise<Set<string>> {
    const { sdk, client } = await this.connect();
    const sizes = new Map<string, number>();
    const folders = new Set(bundles.map((bundle) => this.objectKey(bundle.key.slice(0, bundle.key.lastIndexOf('/') + 1))));
    for (const folder of folders) {
      let continuationToken: string | undefined;
      do {
        const page = (await client.send(
          new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: folder, ContinuationToken: continuationToken }),
        )) as S3Sdk.ListObjectsV2CommandOutput;
        for (const object of page.Contents ?? [])
          if (object.Key !== undefined && object.Size !== undefined) sizes.set(object.Key, object.Size);
        continuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (continuationToken);
    }
    return new Set(bundles.filter((bundle) => sizes.get(this.objectKey(bundle.key)) === bundle.sizeBytes).map((bundle) => bundle.key));
  }

  private async existingByHead(bundles: readonly TargetBundle[]): Promise<Set<string>> {
    const { sdk, client } = await this.connect();
    const held = new Set<string>();
    await forEachAtMost(8, bundles, async (bundle) => {
      const key = this.objectKey(bundle.key);
      try {
        const head = (await client.send(new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: key }))) as S3Sdk.HeadObjectCommandOutput;
        if (head.ContentLength === bundle.sizeBytes) held.add(bundle.key);
      } catch (error) {
        if ((error as S3Failure).$metadata?.httpStatusCode !== 404) throw this.failure('check', key, error);
      }
    });
    return held;
  }

  async putBundle(bundle: TargetBundle): Promise<void> {
    const key = this.objectKey(bundle.key);
    const headers = { ContentType: mediaTypeOf(bundle.key), CacheControl: BUNDLE_CACHE_CONTROL };
    await this.connect();
    try {
      if (bundle.sizeBytes > this.multipartThresholdBytes) await this.putInParts(key, bundle, headers);
      else {
        const { sdk, client } = await this.connect();
        // The name is the SHA-256: S3 checks the body against it and refuses a corrupted upload.
        const checksum = Buffer.from(bundle.sha256, 'hex').toString('base64');
        await client.send(
          new sdk.PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: await readFile(bundle.file),
            ChecksumSHA256: checksum,
            ...headers,
          }),
        );
      }
    } catch (error) {
      throw error instanceof PublishOutputError ? error : this.failure('upload', key, error);
    }
  }

  async putIndex(key: string, bytes: Uint8Array): Promise<void> {
    const { sdk, client } = await this.connect();
    const objectKey = this.objectKey(key);
    try {
      await client.send(
        new sdk.PutObjectCommand({
          Bucket: this.bucket,
          Key: objectKey,
          Body: bytes,
          ContentType: mediaTypeOf(key),
          CacheControl: INDEX_CACHE_CONTROL,
        }),
      );
    } catch (error) {
      throw this.failure('upload', objectKey, error);
    }
  }

  /**
   * A large bundle in parts, read from the staged file one part at a time. The object appears
   * only on Complete; a failed upload is aborted (an interrupted process leaves an incomplete
   * upload behind: a bucket lifecycle rule, AbortIncompleteMultipartUpload, removes those).
   */
  private async putInParts(key: string, bundle: TargetBundle, headers: { ContentType: string; CacheControl: string }): Promise<void> {
    const { sdk, client } = await this.connect();
    const created = (await client.send(
      new sdk.CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ...headers }),
    )) as S3Sdk.CreateMultipartUploadCommandOutput;
    const uploadId = created.UploadId!;
    const handle = await open(bundle.file, 'r');
    try {
      const parts: { ETag: string | undefined; PartNumber: number }[] = [];
      const buffer = Buffer.allocUnsafe(Math.min(this.partSizeBytes, bundle.sizeBytes));
      for (let offset = 0, partNumber = 1; offset < bundle.sizeBytes; offset += this.partSizeBytes, partNumber++) {
        const length = Math.min(this.partSizeBytes, bundle.sizeBytes - offset);
        const { bytesRead } = await handle.read(buffer, 0, length, offset);
        if (bytesRead !== length)
          throw new PublishOutputError(`${bundle.file}: the staged bundle is shorter than ${bundle.sizeBytes} bytes`, bundle.file);
        const part = (await client.send(
          new sdk.UploadPartCommand({
            Bucket: this.bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: partNumber,
            Body: buffer.subarray(0, length),
          }),
        )) as S3Sdk.UploadPartCommandOutput;
        parts.push({ ETag: part.ETag, PartNumber: partNumber });
      }
      await client.send(
        new sdk.CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }),
      );
    } catch (error) {
      await client.send(new sdk.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
      throw error;
    } finally {
      await handle.close();
    }
  }

  private connect() {
    this.connection ??= loadS3Sdk(this.options.loadSdk).then((sdk) => ({ sdk, client: this.options.client ?? this.makeClient(sdk) }));
    return this.connection;
  }

  private makeClient(sdk: typeof S3Sdk): S3Sdk.S3Client {
    const { endpoint } = this.options;
    const region =
      this.options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? (endpoint !== undefined ? 'us-east-1' : undefined);
    return new sdk.S3Client({
      ...(endpoint !== undefined ? { endpoint } : {}),
      ...(region !== undefined ? { region } : {}),
      forcePathStyle: this.options.forcePathStyle ?? endpoint !== undefined,
    });
  }

  private failure(action: 'list' | 'check' | 'upload', key: string, error: unknown): PublishOutputError {
    const failure = error as S3Failure;
    const status = failure.$metadata?.httpStatusCode;
    const what = `${failure.name ?? 'Error'}${status !== undefined ? ` (HTTP ${status})` : ''}: ${failure.message ?? String(error)}`;
    const url = `s3://${this.bucket}/${key}`;
    return new PublishOutputError(`${url}: cannot ${action}: ${what}`, url, error);
  }
}
