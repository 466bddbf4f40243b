// ListObjects (v1 and v2), ListObjectVersions and ListBuckets: an indexed range query in the
// metadata Durable Object, rendered as S3's XML.
import type { ListPage, ListQuery } from "../../meta/types";
import { bucketIndex, bucketRegistry, owner, type RequestContext, type BucketAt } from "../http/context";
import { parseListObjectsParams, parseListVersionsParams, renderListBuckets, renderListObjects, renderListVersions } from "./list.xml";
import { xmlResponse } from "../format/xml";
import { sees } from "../http/permissions";

/** One page of the bucket's keys, or NoSuchBucket. */
async function listPage(ctx: RequestContext, bucket: string, query: ListQuery): Promise<ListPage> {
  const index = bucketIndex(ctx, bucket);
  // Both in parallel: one round trip of latency. The listing of a bucket that does not exist is
  // empty; info() answers NoSuchBucket for it.
  const [, page] = await Promise.all([index.info(), index.list(query)]);
  return page;
}

export async function listObjects(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const req = parseListObjectsParams(ctx.url.searchParams);
  return xmlResponse(renderListObjects(bucket, req, await listPage(ctx, bucket, req.query), owner(ctx)));
}

export async function listObjectVersions(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const req = parseListVersionsParams(ctx.url.searchParams);
  const page = await bucketIndex(ctx, bucket).listVersions(req.query);
  return xmlResponse(renderListVersions(bucket, req, page, owner(ctx)));
}

export async function listBuckets(ctx: RequestContext): Promise<Response> {
  // A key sees the buckets it has a right on (the root key: all).
  const buckets = (await bucketRegistry(ctx).list()).filter((b) => sees(ctx.principal, b.name));
  return xmlResponse(renderListBuckets(buckets, owner(ctx)));
}
