// The Put, Get and Delete of a bucket's configurations kept as one of its settings (JSON in its
// index: CORS, tags, lifecycle, website, default encryption), made from a declaration of how a Put's
// document is read and how a Get answers. Changes go through services/bucket-settings.ts, which
// forgets the isolate's cached copy.
import type { BucketSetting } from "../../meta/bucket-settings";
import { S3Error, type S3ErrorCode } from "../../s3-error";
import { setSetting } from "../../services/bucket-settings";
import { xmlResponse } from "../format/xml";
import { bucketIndex, type BucketAt, type RequestContext } from "./context";

/** A configuration kept as a setting. */
export interface SettingDocument<T> {
  name: BucketSetting;
  /** The document a Put sends, checked; null: nothing to keep (as after a Delete). */
  read(body: ReadableStream<Uint8Array> | null): Promise<T | null>;
  /** The document a Get answers with. */
  render(value: T): string;
  /** S3's error for a Get when there is none. */
  missing: [S3ErrorCode, string];
  /** A Put's status when S3's is not 200. */
  putStatus?: 204;
}

/** The Put, Get and Delete of a configuration kept as a setting. */
export function settingOperations<T>(doc: SettingDocument<T>) {
  return {
    async put(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
      const value = await doc.read(ctx.auth.body);
      await setSetting(ctx.env, bucket, doc.name, value === null ? null : JSON.stringify(value));
      return new Response(null, { status: doc.putStatus ?? 200 });
    },
    async get(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
      const stored = await bucketIndex(ctx, bucket).setting(doc.name);
      if (stored === null) throw new S3Error(...doc.missing);
      return xmlResponse(doc.render(JSON.parse(stored) as T));
    },
    async delete(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
      await setSetting(ctx.env, bucket, doc.name, null);
      return new Response(null, { status: 204 });
    },
  };
}
