"""boto3 against a running shardgate, one operation per invocation, for tests/node/boto3.test.ts.

    SHARDGATE_ENDPOINT=http://127.0.0.1:8787 AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… \\
        python boto3_e2e.py COMMAND < args.json > result.json

COMMAND is one of the functions in COMMANDS below. Each reads its arguments as one JSON object on
stdin and prints one JSON object on stdout, which the TypeScript test asserts on; this side only
measures and reports (digests, lengths, headers, error codes), so every expectation is visible in
the test. Any unexpected exception is a traceback on stderr and exit status 1.

The client has boto3's default settings (botocore computes a CRC32 of every PutObject body and
sends it as x-amz-checksum-crc32, and asks GetObject for the stored checksum, which it then
validates), except that it never retries, so that no transient error is hidden, and it keeps
more connections for the parallel puts.
"""

import base64
import hashlib
import io
import json
import os
import random
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError


def client(pool=10, key=None):
    """A client with the environment's credentials, or with `key` ({"id", "secret"}) when given
    (then presigning with SigV4: botocore's default for a custom endpoint is Signature V2)."""
    creds = {"aws_access_key_id": key["id"], "aws_secret_access_key": key["secret"]} if key else {}
    s3 = boto3.client(
        "s3",
        endpoint_url=os.environ["SHARDGATE_ENDPOINT"],
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 1}, max_pool_connections=pool, **({"signature_version": "s3v4"} if key else {})),
        **creds,
    )
    return s3


def record_request_headers(s3, operation):
    """The headers of every `operation` request sent, as a list of {lowercased name: value}."""
    sent = []

    def hook(request, **_):
        sent.append({k.lower(): (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()})

    s3.meta.events.register(f"before-send.s3.{operation}", hook)
    return sent


def admin_post(s3, path):
    """A SigV4-signed POST to the gateway's admin API (same credentials); its JSON answer."""
    from urllib.request import Request, urlopen

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest

    request = AWSRequest(method="POST", url=os.environ["SHARDGATE_ENDPOINT"] + path, data=b"")
    S3SigV4Auth(s3._request_signer._credentials, "s3", "us-east-1").add_auth(request)
    with urlopen(Request(request.url, data=b"", headers=dict(request.headers.items()), method="POST")) as res:
        return json.loads(res.read())


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def crc32_b64(b):
    return base64.b64encode(zlib.crc32(b).to_bytes(4, "big")).decode()


def error_of(call):
    """Runs call(); returns None, or the S3 error code and HTTP status it failed with."""
    try:
        call()
    except ClientError as e:
        return {"code": e.response["Error"].get("Code"), "status": e.response["ResponseMetadata"]["HTTPStatusCode"]}
    return None


def status(res):
    return res["ResponseMetadata"]["HTTPStatusCode"]


def random_ranges(size, rng, count):
    """Range headers over an object of `size` bytes: closed, open-ended, suffix, and across the
    1 MiB block and 16 KiB chunk edges when the object has them."""
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            a = rng.randrange(size)
            b = rng.randrange(a, min(size, a + rng.choice([1, 100, 20000, 3 << 20])))
            out.append(f"bytes={a}-{b}")
        elif kind == 1:
            out.append(f"bytes={rng.randrange(size)}-")
        elif kind == 2:
            out.append(f"bytes=-{rng.randrange(1, size + 2)}")  # may exceed the size: whole object
        else:
            edge = rng.choice([e for e in (4096, 16384, 1 << 20, 2 << 20, 5 << 20) if e < size] or [size // 2])
            a = max(0, edge - rng.randrange(1, 70000))
            out.append(f"bytes={a}-{min(size - 1, edge + rng.randrange(0, 70000))}")
    return out


def cmd_create_bucket(args):
    s3 = client()
    res = s3.create_bucket(Bucket=args["bucket"])
    return {"status": status(res)}


def cmd_roundtrip(args):
    """PutObject then GetObject of `size` seeded random bytes, then `ranges` random ranged GETs
    and one unsatisfiable one; above 8 MiB also s3transfer's download_fileobj (ranged GETs)."""
    s3 = client()
    sent_headers = record_request_headers(s3, "PutObject")
    bucket, key, size = args["bucket"], args["key"], args["size"]
    rng = random.Random(args.get("seed", size))
    data = rng.randbytes(size)

    put = s3.put_object(Bucket=bucket, Key=key, Body=data)
    get = s3.get_object(Bucket=bucket, Key=key)
    body = get["Body"].read()
    result = {
        "size": size,
        "md5": hashlib.md5(data).hexdigest(),
        "sha256_sent": sha256(data),
        "sha256_got": sha256(body),
        "length_got": len(body),
        "equal": body == data,
        "crc32": crc32_b64(data),
        "put_status": status(put),
        "put_etag": put["ETag"],
        "put_crc32": put.get("ChecksumCRC32"),
        "put_request_checksum_headers": sorted(k for k in sent_headers[-1] if "checksum" in k),
        "put_request_crc32": sent_headers[-1].get("x-amz-checksum-crc32"),
        "get_status": status(get),
        "get_etag": get["ETag"],
        "get_content_length": get["ContentLength"],
        "get_crc32": get.get("ChecksumCRC32"),
        "ranges": [],
    }
    if size > 0:
        for header in random_ranges(size, rng, args.get("ranges", 8)):
            res = s3.get_object(Bucket=bucket, Key=key, Range=header)
            got = res["Body"].read()
            spec = header[len("bytes="):]
            a, _, b = spec.partition("-")
            if a == "":
                want = data[max(0, size - int(b)):]
            else:
                want = data[int(a): (size if b == "" else int(b) + 1)]
            result["ranges"].append({
                "range": header,
                "status": status(res),
                "content_range": res.get("ContentRange"),
                "content_length": res["ContentLength"],
                "length_got": len(got),
                "equal": got == want,
            })
    result["unsatisfiable"] = error_of(lambda: s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={size}-{size + 10}"))
    if size > 8 << 20:
        buf = io.BytesIO()
        s3.download_fileobj(bucket, key, buf)  # s3transfer: HeadObject, then parallel 8 MiB ranged GETs
        result["sha256_download_fileobj"] = sha256(buf.getvalue())
    return result


def cmd_put_many(args):
    """Puts every key in parallel (a thread pool), each with the key's UTF-8 bytes as its body."""
    workers = args.get("workers", 32)
    s3 = client(pool=workers)
    bucket = args["bucket"]
    started = time.monotonic()

    def put(key):
        return s3.put_object(Bucket=bucket, Key=key, Body=key.encode())["ETag"]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        etags = list(pool.map(put, args["keys"]))
    return {"count": len(etags), "seconds": round(time.monotonic() - started, 2)}


def cmd_list(args):
    """Every page of a list_objects_v2 (or, with "v1": true, list_objects) paginator."""
    s3 = client()
    params = {"Bucket": args["bucket"], "Prefix": args.get("prefix", "")}
    if "delimiter" in args:
        params["Delimiter"] = args["delimiter"]
    if "start_after" in args:
        params["StartAfter"] = args["start_after"]
    pages_config = {"PageSize": args["page_size"]} if "page_size" in args else {}
    paginator = s3.get_paginator("list_objects" if args.get("v1") else "list_objects_v2")
    contents, prefixes, pages, key_counts = [], [], [], 0
    for page in paginator.paginate(**params, PaginationConfig=pages_config):
        page_contents = page.get("Contents", [])
        page_prefixes = page.get("CommonPrefixes", [])
        contents += [[o["Key"], o["Size"], o["ETag"]] for o in page_contents]
        prefixes += [p["Prefix"] for p in page_prefixes]
        pages.append({
            "entries": len(page_contents) + len(page_prefixes),
            "truncated": page["IsTruncated"],
            "key_count": page.get("KeyCount"),
        })
    return {"contents": contents, "prefixes": prefixes, "pages": pages}


def cmd_overwrite_delete(args):
    """Put, overwrite with other bytes of another size, read back; delete twice; delete a key
    that never existed."""
    s3 = client()
    bucket, key = args["bucket"], args["key"]
    rng = random.Random(7)
    first, second = rng.randbytes(args["first_size"]), rng.randbytes(args["second_size"])
    s3.put_object(Bucket=bucket, Key=key, Body=first)
    put2 = s3.put_object(Bucket=bucket, Key=key, Body=second)
    get = s3.get_object(Bucket=bucket, Key=key)
    body = get["Body"].read()
    head = s3.head_object(Bucket=bucket, Key=key)
    return {
        "after_overwrite": {
            "equal_second": body == second,
            "length": len(body),
            "get_etag": get["ETag"],
            "put_etag": put2["ETag"],
            "md5_second": hashlib.md5(second).hexdigest(),
            "head_length": head["ContentLength"],
        },
        "delete_status": status(s3.delete_object(Bucket=bucket, Key=key)),
        "get_after_delete": error_of(lambda: s3.get_object(Bucket=bucket, Key=key)),
        "head_after_delete": error_of(lambda: s3.head_object(Bucket=bucket, Key=key)),
        "delete_again_status": status(s3.delete_object(Bucket=bucket, Key=key)),
        "delete_never_existed_status": status(s3.delete_object(Bucket=bucket, Key=args["missing_key"])),
        "listed_after_delete": [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])],
    }


def cmd_head(args):
    """PutObject with content headers and user metadata, then HeadObject."""
    s3 = client()
    bucket, key = args["bucket"], args["key"]
    data = random.Random(11).randbytes(args["size"])
    put = s3.put_object(Bucket=bucket, Key=key, Body=data, **args["put"])
    head = s3.head_object(Bucket=bucket, Key=key)
    keep = ["ContentLength", "ContentType", "ContentDisposition", "ContentEncoding", "ContentLanguage",
            "CacheControl", "ETag", "Metadata", "AcceptRanges"]
    out = {k: head[k] for k in keep if k in head}
    out["LastModified"] = head["LastModified"].isoformat()
    return {"md5": hashlib.md5(data).hexdigest(), "put_etag": put["ETag"], "head": out,
            "head_missing": error_of(lambda: s3.head_object(Bucket=bucket, Key=key + ".missing"))}


def cmd_transfer(args):
    """upload_file / download_file with boto3's TransferConfig defaults (multipart above 8 MiB,
    8 MiB parts) but 4 threads; reports digests, the ETag and the upload's checksum."""
    s3 = client(pool=20)
    bucket, key, size = args["bucket"], args["key"], args["size"]
    data = random.Random(size).randbytes(size)
    src, dst = os.path.join(args["dir"], "up.bin"), os.path.join(args["dir"], "down.bin")
    with open(src, "wb") as f:
        f.write(data)
    # 4 threads instead of 10: one local isolate serves every request (see tests/node/aws-cli.test.ts).
    transfer = TransferConfig(max_concurrency=4)
    s3.upload_file(src, bucket, key, Config=transfer)
    s3.download_file(bucket, key, dst, Config=transfer)
    with open(dst, "rb") as f:
        got = f.read()
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    return {
        "sha256_sent": sha256(data),
        "sha256_got": sha256(got),
        "etag": head["ETag"],
        "content_length": head["ContentLength"],
        "checksum_crc32": head.get("ChecksumCRC32"),
        "checksum_type": head.get("ChecksumType"),
        "part_md5s": [hashlib.md5(data[i:i + (8 << 20)]).hexdigest() for i in range(0, size, 8 << 20)],
    }


def cmd_checksums(args):
    """put_object with ChecksumAlgorithm set (botocore computes it, awscrt for CRC32C and
    CRC64NVME), then get_object with ChecksumMode=ENABLED (botocore validates the body against
    it); and a put_object whose checksum header is wrong."""
    s3 = client()
    bucket = args["bucket"]
    data = random.Random(5).randbytes(args["size"])
    out = {}
    for algorithm in ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"]:
        key = f"checksums/{algorithm}.bin"
        put = s3.put_object(Bucket=bucket, Key=key, Body=data, ChecksumAlgorithm=algorithm)
        get = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        body = get["Body"].read()
        out[algorithm] = {
            "put": put.get(f"Checksum{algorithm}"),
            "get": get.get(f"Checksum{algorithm}"),
            "equal": body == data,
        }
    wrong = {"ChecksumSHA256": base64.b64encode(hashlib.sha256(b"other bytes").digest()).decode()}
    out["wrong"] = error_of(lambda: s3.put_object(Bucket=bucket, Key="checksums/wrong.bin", Body=data, **wrong))
    out["wrong_stored"] = error_of(lambda: s3.head_object(Bucket=bucket, Key="checksums/wrong.bin"))
    out["sha256"] = base64.b64encode(hashlib.sha256(data).digest()).decode()
    out["sha1"] = base64.b64encode(hashlib.sha1(data).digest()).decode()
    out["crc32"] = crc32_b64(data)
    return out


def cmd_copy_delete(args):
    """copy_object (keeping and replacing metadata), then delete_objects of a batch that
    includes a key that never existed."""
    s3 = client()
    bucket = args["bucket"]
    data = random.Random(9).randbytes(args["size"])
    s3.put_object(Bucket=bucket, Key="cd/source.bin", Body=data, Metadata={"kept": "yes"}, ContentType="text/x-source")
    copy = s3.copy_object(Bucket=bucket, Key="cd/copy.bin", CopySource={"Bucket": bucket, "Key": "cd/source.bin"})
    replaced = s3.copy_object(Bucket=bucket, Key="cd/replaced.bin", CopySource=f"{bucket}/cd/source.bin",
                              MetadataDirective="REPLACE", Metadata={"new": "1"}, ContentType="text/x-new")
    heads = {k: s3.head_object(Bucket=bucket, Key=f"cd/{k}.bin") for k in ["copy", "replaced"]}
    copied = s3.get_object(Bucket=bucket, Key="cd/copy.bin")["Body"].read()
    keys = [f"cd/{k}.bin" for k in ["source", "copy", "replaced", "never"]]
    deleted = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys]})
    return {
        "md5": hashlib.md5(data).hexdigest(),
        "copy_etag": copy["CopyObjectResult"]["ETag"],
        "replaced_etag": replaced["CopyObjectResult"]["ETag"],
        "copy_equal": copied == data,
        "copy_head": {"metadata": heads["copy"]["Metadata"], "content_type": heads["copy"]["ContentType"]},
        "replaced_head": {"metadata": heads["replaced"]["Metadata"], "content_type": heads["replaced"]["ContentType"]},
        "deleted": sorted(d["Key"] for d in deleted.get("Deleted", [])),
        "errors": deleted.get("Errors", []),
        "left": [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="cd/").get("Contents", [])],
    }


def cmd_conditional_writes(args):
    """Conditional writes with boto3's IfMatch= / IfNoneMatch= parameters: put_object,
    copy_object (the destination) and complete_multipart_upload over no object, another ETag and
    the current one; eight racing put_object calls with IfMatch on one ETag, and eight racing
    complete_multipart_upload calls onto one key with IfNoneMatch="*", then with IfMatch."""
    s3 = client(pool=16)
    bucket = args["bucket"]
    rng = random.Random(33)
    out = {}
    out["put_if_match_star_missing"] = error_of(lambda: s3.put_object(Bucket=bucket, Key="cw/none", Body=b"x", IfMatch="*"))
    out["put_if_match_etag_missing"] = error_of(lambda: s3.put_object(Bucket=bucket, Key="cw/none", Body=b"x", IfMatch='"abc"'))
    etag = s3.put_object(Bucket=bucket, Key="cw/obj", Body=b"one", IfNoneMatch="*")["ETag"]
    out["put_if_none_match_existing"] = error_of(lambda: s3.put_object(Bucket=bucket, Key="cw/obj", Body=b"x", IfNoneMatch="*"))
    out["put_if_match_wrong"] = error_of(lambda: s3.put_object(Bucket=bucket, Key="cw/obj", Body=b"x", IfMatch='"abc"'))
    out["put_if_match_unquoted"] = status(s3.put_object(Bucket=bucket, Key="cw/obj", Body=b"two", IfMatch=etag.strip('"')))
    src = {"Bucket": bucket, "Key": "cw/obj"}
    out["copy_if_match_missing"] = error_of(lambda: s3.copy_object(Bucket=bucket, Key="cw/copy", CopySource=src, IfMatch="*"))
    out["copy_if_none_match_new"] = status(s3.copy_object(Bucket=bucket, Key="cw/copy", CopySource=src, IfNoneMatch="*"))
    out["copy_if_none_match_existing"] = error_of(lambda: s3.copy_object(Bucket=bucket, Key="cw/copy", CopySource=src, IfNoneMatch="*"))
    out["copy_if_match_wrong"] = error_of(lambda: s3.copy_object(Bucket=bucket, Key="cw/copy", CopySource=src, IfMatch='"abc"'))

    def upload(key, body):
        uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        part = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=body)
        return uid, {"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}

    def complete(key, up, **cond):
        return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up[0], MultipartUpload=up[1], **cond)

    up = upload("cw/mpu", b"m" * 1000)
    out["complete_if_match_missing"] = error_of(lambda: complete("cw/mpu", up, IfMatch="*"))
    out["complete_upload_left"] = len(s3.list_parts(Bucket=bucket, Key="cw/mpu", UploadId=up[0]).get("Parts", []))
    done = complete("cw/mpu", up, IfNoneMatch="*")
    out["complete_if_none_match_new"] = {"status": status(done), "version_id": done.get("VersionId")}
    up = upload("cw/mpu", b"n" * 1000)
    out["complete_if_none_match_existing"] = error_of(lambda: complete("cw/mpu", up, IfNoneMatch="*"))
    out["complete_if_match_wrong"] = error_of(lambda: complete("cw/mpu", up, IfMatch='"abc"'))
    out["complete_if_match_current"] = status(complete("cw/mpu", up, IfMatch=done["ETag"]))

    base = s3.put_object(Bucket=bucket, Key="cw/race", Body=b"base")["ETag"]
    bodies = [rng.randbytes(256 * 1024 + i) for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        puts = list(pool.map(lambda b: error_of(lambda: s3.put_object(Bucket=bucket, Key="cw/race", Body=b, IfMatch=base)), bodies))
    stored = s3.get_object(Bucket=bucket, Key="cw/race")["Body"].read()
    out["race_put"] = {"errors": puts, "winner_stored": [i for i, e in enumerate(puts) if e is None and bodies[i] == stored]}
    for name, cond in [("race_complete_create", {"IfNoneMatch": "*"}), ("race_complete_cas", None)]:
        key = f"cw/{name}"
        if cond is None:
            cond = {"IfMatch": s3.put_object(Bucket=bucket, Key=key, Body=b"base")["ETag"]}
        bodies = [rng.randbytes(64 * 1024 + i) for i in range(8)]
        ups = [upload(key, b) for b in bodies]
        with ThreadPoolExecutor(8) as pool:
            errs = list(pool.map(lambda u: error_of(lambda: complete(key, u, **cond)), ups))
        stored = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        out[name] = {"errors": errs, "winner_stored": [i for i, e in enumerate(errs) if e is None and bodies[i] == stored]}
        for u, e in zip(ups, errs):
            if e is not None:  # a refused completion leaves its upload: aborted here
                s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=u[0])
    return out

def cmd_versioning(args):
    """A versioned bucket end to end: versions by id, a delete marker and its undoing, a version
    deleted for good, DeleteObjects with VersionId, a copy from a version, concurrent overwrites,
    and suspension (the null version overwritten in place)."""
    s3 = client(pool=16)
    bucket = args["bucket"]
    s3.create_bucket(Bucket=bucket)
    before = s3.get_bucket_versioning(Bucket=bucket).get("Status")
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bucket, Key="doc", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="doc", Body=b"two")["VersionId"]
    by_id = s3.get_object(Bucket=bucket, Key="doc", VersionId=v1)
    marker = s3.delete_object(Bucket=bucket, Key="doc")
    listed = s3.list_object_versions(Bucket=bucket, Prefix="doc")
    after_marker = error_of(lambda: s3.get_object(Bucket=bucket, Key="doc"))
    s3.delete_object(Bucket=bucket, Key="doc", VersionId=marker["VersionId"])
    restored = s3.get_object(Bucket=bucket, Key="doc")
    s3.delete_object(Bucket=bucket, Key="doc", VersionId=v2)
    after_delete_v2 = s3.get_object(Bucket=bucket, Key="doc")
    copy = s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "doc", "VersionId": v1})
    batch = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "doc", "VersionId": v1}, {"Key": "copy"}]})

    def put(i):
        return s3.put_object(Bucket=bucket, Key="race", Body=f"writer-{i}".encode())["VersionId"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        race_ids = list(pool.map(put, range(16)))
    race = s3.list_object_versions(Bucket=bucket, Prefix="race")["Versions"]
    race_current = s3.head_object(Bucket=bucket, Key="race")["VersionId"]
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    null1 = s3.put_object(Bucket=bucket, Key="race", Body=b"suspended 1")
    null2 = s3.put_object(Bucket=bucket, Key="race", Body=b"suspended 2")
    race_after = s3.list_object_versions(Bucket=bucket, Prefix="race")["Versions"]
    return {
        "before": before,
        "status": s3.get_bucket_versioning(Bucket=bucket).get("Status"),
        "ids": [v1, v2],
        "by_id": {"body": by_id["Body"].read().decode(), "version": by_id["VersionId"]},
        "marker": {"delete_marker": marker.get("DeleteMarker"), "version": marker.get("VersionId")},
        "listed": {
            "versions": [[v["VersionId"], v["IsLatest"]] for v in listed.get("Versions", [])],
            "markers": [[m["VersionId"], m["IsLatest"]] for m in listed.get("DeleteMarkers", [])],
        },
        "after_marker": after_marker,
        "restored": restored["Body"].read().decode(),
        "after_delete_v2": {"body": after_delete_v2["Body"].read().decode(), "version": after_delete_v2["VersionId"]},
        "copy": {"source_version": copy.get("CopySourceVersionId"), "version": copy.get("VersionId")},
        "batch": {
            "deleted": [[d["Key"], d.get("VersionId"), d.get("DeleteMarker", False)] for d in batch.get("Deleted", [])],
            "errors": batch.get("Errors", []),
        },
        "race": {
            "ids": len(set(race_ids)),
            "listed": len(race),
            "latest": [v["VersionId"] for v in race if v["IsLatest"]],
            "current": race_current,
        },
        "suspended": {
            "put_versions": [null1.get("VersionId"), null2.get("VersionId")],
            "versions": [[v["VersionId"], v["IsLatest"]] for v in race_after],
            "body": s3.get_object(Bucket=bucket, Key="race")["Body"].read().decode(),
        },
    }


def cmd_bucket_settings(args):
    """Bucket tagging and ACLs as boto3 sends them, and the conformance details an S3 test suite
    checks: If-None-Match with an ETag, tags sorted by key, a bare tag in x-amz-tagging,
    StartAfter echoed with a continuation token, ObjectParts of a multipart object."""
    s3 = client()
    bucket = args["bucket"]
    s3.create_bucket(Bucket=bucket, ACL="private")
    no_tags = error_of(lambda: s3.get_bucket_tagging(Bucket=bucket))
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "team", "Value": "edge"}, {"Key": "app", "Value": "gw"}]})
    tags = s3.get_bucket_tagging(Bucket=bucket)["TagSet"]
    s3.delete_bucket_tagging(Bucket=bucket)
    deleted_tags = error_of(lambda: s3.get_bucket_tagging(Bucket=bucket))
    bucket_acl = s3.get_bucket_acl(Bucket=bucket)
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    etag = s3.put_object(Bucket=bucket, Key="obj", Body=b"x", ACL="private", Tagging="zeta=1&alpha&mid=2")["ETag"]
    object_acl = s3.get_object_acl(Bucket=bucket, Key="obj")
    s3.put_object_acl(Bucket=bucket, Key="obj", ACL="private")
    public = error_of(lambda: s3.put_object_acl(Bucket=bucket, Key="obj", ACL="public-read"))
    object_tags = s3.get_object_tagging(Bucket=bucket, Key="obj")["TagSet"]
    if_none_match = error_of(lambda: s3.put_object(Bucket=bucket, Key="obj", Body=b"y", IfNoneMatch=etag))
    for i in range(5):
        s3.put_object(Bucket=bucket, Key=f"list/{i}", Body=b"")
    first = s3.list_objects_v2(Bucket=bucket, Prefix="list/", StartAfter="list/0", MaxKeys=2)
    second = s3.list_objects_v2(Bucket=bucket, Prefix="list/", StartAfter="list/0", MaxKeys=2, ContinuationToken=first["NextContinuationToken"])
    upload = s3.create_multipart_upload(Bucket=bucket, Key="parts", ACL="private")["UploadId"]
    parts = [
        {"PartNumber": n, "ETag": s3.upload_part(Bucket=bucket, Key="parts", UploadId=upload, PartNumber=n, Body=bytes([n]) * (5 * 1024 * 1024 if n < 3 else 10))["ETag"]}
        for n in (1, 2, 3)
    ]
    s3.complete_multipart_upload(Bucket=bucket, Key="parts", UploadId=upload, MultipartUpload={"Parts": parts})
    attrs = s3.get_object_attributes(Bucket=bucket, Key="parts", ObjectAttributes=["ObjectParts"], MaxParts=2)
    attrs2 = s3.get_object_attributes(Bucket=bucket, Key="parts", ObjectAttributes=["ObjectParts"], MaxParts=2, PartNumberMarker=2)
    grants = lambda acl: [[g["Grantee"].get("ID"), g["Permission"]] for g in acl["Grants"]]  # noqa: E731
    return {
        "no_tags": no_tags,
        "tags": [[t["Key"], t["Value"]] for t in tags],
        "deleted_tags": deleted_tags,
        "owner": bucket_acl["Owner"]["ID"],
        "bucket_grants": grants(bucket_acl),
        "object_grants": grants(object_acl),
        "public": public,
        "object_tags": [[t["Key"], t["Value"]] for t in object_tags],
        "if_none_match": if_none_match,
        "body": s3.get_object(Bucket=bucket, Key="obj")["Body"].read().decode(),
        "start_after": [first.get("StartAfter"), second.get("StartAfter")],
        "listed": [o["Key"] for o in first["Contents"] + second["Contents"]],
        "parts": {
            # botocore's name for the PartsCount element.
            "count": attrs["ObjectParts"].get("TotalPartsCount"),
            "first": [p["PartNumber"] for p in attrs["ObjectParts"]["Parts"]],
            "truncated": attrs["ObjectParts"]["IsTruncated"],
            "next": [p["PartNumber"] for p in attrs2["ObjectParts"]["Parts"]],
        },
    }


def cmd_lifecycle(args):
    """Lifecycle rules set and read back with boto3, x-amz-expiration on put and head, then the
    rules applied as of `days` days from now (the admin API moves the clock) and what is left."""
    from datetime import datetime, timedelta, timezone
    from urllib.parse import quote

    s3 = client()
    bucket = args["bucket"]
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    missing = error_of(lambda: s3.get_bucket_lifecycle_configuration(Bucket=bucket))
    rules = [
        {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 1}},
        {"ID": "scratch", "Filter": {"Tag": {"Key": "kind", "Value": "scratch"}}, "Status": "Enabled", "Expiration": {"Days": 2}},
        {
            "ID": "history",
            "Filter": {"Prefix": ""},
            "Status": "Enabled",
            "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1},
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
        },
    ]
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    bad = error_of(lambda: s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [{"ID": "x", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 0}}]}))
    put = s3.put_object(Bucket=bucket, Key="logs/a.log", Body=b"log")
    head = s3.head_object(Bucket=bucket, Key="logs/a.log")
    s3.put_object(Bucket=bucket, Key="notes/n.txt", Body=b"scratch", Tagging="kind=scratch")
    for body in (b"v1", b"v2", b"v3"):
        s3.put_object(Bucket=bucket, Key="doc.txt", Body=body)
    upload = s3.create_multipart_upload(Bucket=bucket, Key="big.bin")["UploadId"]
    at = (datetime.now(timezone.utc) + timedelta(days=args["days"])).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = admin_post(s3, f"/_shardgate/admin/lifecycle?bucket={bucket}&now={quote(at, safe='')}")
    listed = s3.list_object_versions(Bucket=bucket)
    uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    s3.delete_bucket_lifecycle(Bucket=bucket)
    return {
        "missing": missing,
        "rules": got,
        "bad": bad,
        "put_expiration": put.get("Expiration"),
        "head_expiration": head.get("Expiration"),
        "expired": report["expired"],
        "versions": sorted([v["Key"], v["IsLatest"]] for v in listed.get("Versions", [])),
        "markers": sorted([m["Key"], m["IsLatest"]] for m in listed.get("DeleteMarkers", [])),
        "uploads": [u["UploadId"] for u in uploads if u["UploadId"] == upload],
        "deleted": error_of(lambda: s3.get_bucket_lifecycle_configuration(Bucket=bucket)),
    }


def cmd_object_lock(args):
    """Object lock as backup tools use it: a bucket created with lock, a default GOVERNANCE
    retention, a COMPLIANCE retention and a legal hold set with boto3, then deletes that the
    locks refuse (also `parallel` at once) and those the bypass or a lifted hold allow."""
    from datetime import datetime, timedelta, timezone

    s3 = client(pool=args["parallel"])
    bucket = args["bucket"]
    s3.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    versioning = s3.get_bucket_versioning(Bucket=bucket).get("Status")
    default = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
    s3.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration=default)
    config = s3.get_object_lock_configuration(Bucket=bucket)["ObjectLockConfiguration"]
    suspend = error_of(lambda: s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"}))

    # boto3 sends a CRC32 of every body: the proof of integrity object lock asks for.
    governed = s3.put_object(Bucket=bucket, Key="governed", Body=b"g")["VersionId"]
    head = s3.head_object(Bucket=bucket, Key="governed")
    until = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)
    sealed = s3.put_object(Bucket=bucket, Key="sealed", Body=b"s", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    held = s3.put_object(Bucket=bucket, Key="held", Body=b"h")["VersionId"]
    s3.put_object_legal_hold(Bucket=bucket, Key="held", VersionId=held, LegalHold={"Status": "ON"})

    def delete(key, version, **kw):
        return error_of(lambda: s3.delete_object(Bucket=bucket, Key=key, VersionId=version, **kw))

    with ThreadPoolExecutor(max_workers=args["parallel"]) as pool:
        refused = list(pool.map(lambda i: delete(*[("governed", governed), ("sealed", sealed), ("held", held)][i % 3]), range(args["parallel"])))
    batch = s3.delete_objects(
        Bucket=bucket,
        BypassGovernanceRetention=True,
        Delete={"Objects": [{"Key": "sealed", "VersionId": sealed}, {"Key": "held", "VersionId": held}]},
    )
    shorten = error_of(lambda: s3.put_object_retention(Bucket=bucket, Key="sealed", VersionId=sealed, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until - timedelta(days=1)}, BypassGovernanceRetention=True))
    retention = s3.get_object_retention(Bucket=bucket, Key="sealed", VersionId=sealed)["Retention"]
    hold = s3.get_object_legal_hold(Bucket=bucket, Key="held", VersionId=held)["LegalHold"]["Status"]
    s3.put_object_legal_hold(Bucket=bucket, Key="held", VersionId=held, LegalHold={"Status": "OFF"})
    return {
        "versioning": versioning,
        "config": config,
        "suspend": suspend,
        "head": [head.get("ObjectLockMode"), head["ObjectLockRetainUntilDate"] > datetime.now(timezone.utc)],
        "refused": refused,
        "batch_errors": sorted([e["Key"], e["Code"]] for e in batch.get("Errors", [])),
        "shorten": shorten,
        "retention": [retention["Mode"], retention["RetainUntilDate"] == until],
        "hold": hold,
        "bypassed": delete("governed", governed, BypassGovernanceRetention=True),
        # held also has the default GOVERNANCE retention: with the hold lifted, the bypass deletes it.
        "unheld": delete("held", held, BypassGovernanceRetention=True),
        "still_sealed": s3.get_object(Bucket=bucket, Key="sealed", VersionId=sealed)["Body"].read().decode(),
        "left": sorted(v["Key"] for v in s3.list_object_versions(Bucket=bucket).get("Versions", [])),
    }


def cmd_many_versions(args):
    """Puts `versions` versions spread over `keys` keys (in parallel), then pages through
    list_object_versions; reports each key's listed ids in order against the ids it was given."""
    workers = args.get("workers", 16)
    s3 = client(pool=workers)
    bucket = args["bucket"]
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    keys = [f"key-{k:03d}" for k in range(args["keys"])]

    def put_all(key):
        # One key's versions in order (a thread per key): newest last.
        return [s3.put_object(Bucket=bucket, Key=key, Body=f"{key}-{i}".encode())["VersionId"] for i in range(args["versions"] // len(keys))]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        written = dict(zip(keys, pool.map(put_all, keys)))
    listed, pages = {}, 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, PaginationConfig={"PageSize": args.get("page_size", 1000)}):
        pages += 1
        for v in page.get("Versions", []):
            listed.setdefault(v["Key"], []).append([v["VersionId"], v["IsLatest"]])
    ok = all([v for v, _ in listed.get(k, [])] == list(reversed(ids)) for k, ids in written.items())
    latest_ok = all([latest for _, latest in listed[k]] == [True] + [False] * (len(listed[k]) - 1) for k in listed)
    return {"written": sum(len(v) for v in written.values()), "listed": sum(len(v) for v in listed.values()), "pages": pages, "order_ok": ok, "latest_ok": latest_ok}


def cmd_access_keys(args):
    """What keys made through the admin API may do, each with its own boto3 client: the buckets it
    lists, and per operation on `bucket` its result or S3 error code."""
    import urllib.request

    bucket = args["bucket"]
    out = {}
    for name, key in args["keys"].items():
        s3 = client(key=key)
        r = {}
        try:
            r["buckets"] = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        except ClientError as e:
            r["buckets"] = e.response["Error"]["Code"]
        r["put"] = error_of(lambda: s3.put_object(Bucket=bucket, Key=f"by-{name}.txt", Body=name.encode()))
        r["get"] = error_of(lambda: s3.get_object(Bucket=bucket, Key="shared.txt")["Body"].read())
        r["list"] = error_of(lambda: s3.list_objects_v2(Bucket=bucket))
        r["delete"] = error_of(lambda: s3.delete_object(Bucket=bucket, Key="nothing-here.txt"))
        r["versioning"] = error_of(lambda: s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"}))
        url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "shared.txt"}, ExpiresIn=300)
        try:
            with urllib.request.urlopen(url) as res:
                r["presigned"] = res.read().decode()
        except urllib.error.HTTPError as e:
            r["presigned"] = e.code
        out[name] = r
    return out


def cmd_bucket_policy(args):
    """A public-read prefix set with put_bucket_policy, read back, then used by an unsigned boto3
    client (what a browser or curl does): allowed under the prefix, AccessDenied elsewhere."""
    from botocore import UNSIGNED

    s3 = client()
    bucket = args["bucket"]
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="public/hello.txt", Body=b"hello")
    s3.put_object(Bucket=bucket, Key="private/secret.txt", Body=b"secret")
    policy = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/public/*"}],
        }
    )
    out = {"malformed": error_of(lambda: s3.put_bucket_policy(Bucket=bucket, Policy='{"Statement": []}'))}
    s3.put_bucket_policy(Bucket=bucket, Policy=policy)
    out["stored"] = s3.get_bucket_policy(Bucket=bucket)["Policy"] == policy
    out["public"] = s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"]
    anon = boto3.client(
        "s3", endpoint_url=os.environ["SHARDGATE_ENDPOINT"], region_name="us-east-1", config=Config(signature_version=UNSIGNED, retries={"total_max_attempts": 1})
    )
    out["anonymous_get"] = anon.get_object(Bucket=bucket, Key="public/hello.txt")["Body"].read().decode()
    out["anonymous_private"] = error_of(lambda: anon.get_object(Bucket=bucket, Key="private/secret.txt"))
    out["anonymous_put"] = error_of(lambda: anon.put_object(Bucket=bucket, Key="public/new.txt", Body=b"x"))
    out["anonymous_list"] = error_of(lambda: anon.list_objects_v2(Bucket=bucket))
    s3.delete_bucket_policy(Bucket=bucket)
    out["after_delete"] = error_of(lambda: anon.get_object(Bucket=bucket, Key="public/hello.txt"))
    out["no_policy"] = error_of(lambda: s3.get_bucket_policy(Bucket=bucket))
    return out


def cmd_sigv2(args):
    """Signature Version 2 as boto3 makes it: generate_presigned_url's default for a custom
    endpoint (AWSAccessKeyId/Signature/Expires), a presigned PUT, an expired URL, a key without
    the right, and a client signing its headers with V2 (signature_version "s3")."""
    import time
    import urllib.request

    bucket = args["bucket"]
    s3 = client()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="dir/hello world.txt", Body=b"hello v2")

    def fetch(url, method="GET", data=None, headers=None):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method=method, data=data, headers=headers or {})) as res:
                return res.read().decode()
        except urllib.error.HTTPError as e:
            return e.code

    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "dir/hello world.txt"}, ExpiresIn=300)
    # Content-Type is signed in V2: the URL names the one the upload sends.
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "uploaded.txt", "ContentType": "text/plain"}, ExpiresIn=300)
    short = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "dir/hello world.txt"}, ExpiresIn=1)
    stranger = client(key=args["stranger"])
    stranger_v2 = boto3.client(
        "s3",
        endpoint_url=os.environ["SHARDGATE_ENDPOINT"],
        region_name="us-east-1",
        aws_access_key_id=args["stranger"]["id"],
        aws_secret_access_key=args["stranger"]["secret"],
        config=Config(retries={"total_max_attempts": 1}),
    )
    out = {
        "v2_url": "AWSAccessKeyId=" in get_url and "Signature=" in get_url and "X-Amz-Signature" not in get_url,
        "get": fetch(get_url),
        "put": fetch(put_url, "PUT", b"put with v2", {"Content-Type": "text/plain"}),
        "stranger_get": fetch(stranger_v2.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "dir/hello world.txt"})),
        "stranger_v4": error_of(lambda: stranger.get_object(Bucket=bucket, Key="dir/hello world.txt")),
    }
    out["uploaded"] = s3.get_object(Bucket=bucket, Key="uploaded.txt")["Body"].read().decode()
    # Valid for 0 seconds: V2's Expires is now, V4's X-Amz-Expires=0; both have expired (403).
    # (botocore's own SigV4 query signer: with awscrt installed, generate_presigned_url refuses 0.)
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest

    out["zero_v2"] = fetch(s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "dir/hello world.txt"}, ExpiresIn=0))
    zero = AWSRequest(method="GET", url=f"{os.environ['SHARDGATE_ENDPOINT']}/{bucket}/dir/hello%20world.txt")
    S3SigV4QueryAuth(s3._request_signer._credentials, "s3", "us-east-1", expires=0).add_auth(zero)
    out["zero_v4"] = fetch(zero.url)
    time.sleep(2.2)
    out["expired"] = fetch(short)
    tampered = get_url.replace("hello%20world", "hello%20there")
    out["tampered"] = fetch(tampered)

    header = client_with(signature_version="s3")
    header.put_object(Bucket=bucket, Key="header/a+b.txt", Body=b"header v2", ContentType="text/plain", Metadata={"note": "v2"})
    got = header.get_object(Bucket=bucket, Key="header/a+b.txt")
    out["header_get"] = [got["Body"].read().decode(), got["Metadata"]]
    out["header_list"] = [o["Key"] for o in header.list_objects_v2(Bucket=bucket, Prefix="header/")["Contents"]]
    out["header_tagging"] = error_of(lambda: header.put_object_tagging(Bucket=bucket, Key="header/a+b.txt", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}))
    header.delete_object(Bucket=bucket, Key="header/a+b.txt")
    out["header_deleted"] = error_of(lambda: header.head_object(Bucket=bucket, Key="header/a+b.txt"))
    return out


def cmd_session_token(args):
    """Temporary credentials as boto3 gets and uses them: sts.get_session_token against the gateway,
    then an S3 client with aws_session_token (put, get, list, presigned GETs with the token in the
    query, SigV4 and boto3's default SigV2), the same key without its token, a duration over the
    hour, a session asking for another, assume_role; with "key", a key's session has its rights."""
    import urllib.request
    from datetime import datetime, timezone

    endpoint = os.environ["SHARDGATE_ENDPOINT"]
    bucket = args["bucket"]
    config = Config(retries={"total_max_attempts": 1})

    def fetch(url):
        try:
            with urllib.request.urlopen(url) as res:
                return res.read().decode()
        except urllib.error.HTTPError as e:
            return e.code

    def clients(creds, **extra):
        kw = {"aws_access_key_id": creds["AccessKeyId"], "aws_secret_access_key": creds["SecretAccessKey"], **extra}
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=Config(retries={"total_max_attempts": 1}, signature_version="s3v4"), **kw)
        sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1", config=config, **kw)
        return s3, sts

    key = args.get("key")
    parent = {"AccessKeyId": key["id"], "SecretAccessKey": key["secret"]} if key else None
    sts = clients(parent)[1] if parent else boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1", config=config)
    creds = sts.get_session_token(DurationSeconds=900)["Credentials"]
    out = {"key_id": creds["AccessKeyId"], "expires_in": (creds["Expiration"] - datetime.now(timezone.utc)).total_seconds()}
    s3, temp_sts = clients(creds, aws_session_token=creds["SessionToken"])
    out["put"] = error_of(lambda: s3.put_object(Bucket=bucket, Key="session.txt", Body=b"made with a session"))
    out["get"] = s3.get_object(Bucket=bucket, Key=args["read"])["Body"].read().decode()
    out["listed"] = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": args["read"]}, ExpiresIn=300)
    out["presigned_token"] = "X-Amz-Security-Token=" in url
    out["presigned"] = fetch(url)
    v2 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        config=config,
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
    )
    out["presigned_v2"] = fetch(v2.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": args["read"]}, ExpiresIn=300))
    out["without_token"] = error_of(lambda: clients(creds)[0].list_objects_v2(Bucket=bucket))
    out["too_long"] = error_of(lambda: sts.get_session_token(DurationSeconds=7200))
    out["from_session"] = error_of(lambda: temp_sts.get_session_token())
    role = sts.assume_role(RoleArn="arn:aws:iam::000000000000:role/console", RoleSessionName="e2e", DurationSeconds=900)["Credentials"]
    out["assume_role_list"] = error_of(lambda: clients(role, aws_session_token=role["SessionToken"])[0].list_objects_v2(Bucket=bucket))
    return out


def client_with(**config):
    return boto3.client(
        "s3",
        endpoint_url=os.environ["SHARDGATE_ENDPOINT"],
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 1}, **config),
    )


def cmd_presigned_post(args):
    """Browser form uploads as boto3 prepares them (generate_presigned_post, SigV4 fields and a
    policy with conditions), posted as multipart/form-data the way browsers encode it."""
    import urllib.request
    import uuid

    bucket = args["bucket"]
    s3 = client_with(signature_version="s3v4")
    s3.create_bucket(Bucket=bucket)

    def post_form(fields, filename, data):
        boundary = uuid.uuid4().hex
        body = b""
        for name, value in fields.items():
            body += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        body += f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
        body += data + f"\r\n--{boundary}--\r\n".encode()
        req = urllib.request.Request(post["url"], data=body, method="POST", headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        try:
            with urllib.request.urlopen(req) as res:
                return {"status": res.status, "body": res.read().decode()}
        except urllib.error.HTTPError as e:
            xml = e.read().decode()
            return {"status": e.code, "code": xml.split("<Code>")[1].split("</Code>")[0] if "<Code>" in xml else None}

    data = os.urandom(300_000)
    post = s3.generate_presigned_post(
        bucket,
        "forms/${filename}",
        Fields={"Content-Type": "image/png", "success_action_status": "201", "x-amz-meta-by": "boto3"},
        Conditions=[
            ["starts-with", "$key", "forms/"],
            {"Content-Type": "image/png"},
            {"success_action_status": "201"},
            {"x-amz-meta-by": "boto3"},
            ["content-length-range", 1, 1_000_000],
        ],
        ExpiresIn=300,
    )
    out = {"fields": sorted(post["fields"].keys())}
    out["stored"] = post_form(post["fields"], "photo.png", data)
    obj = s3.get_object(Bucket=bucket, Key="forms/photo.png")
    out["same"] = obj["Body"].read() == data
    out["type"] = obj["ContentType"]
    out["metadata"] = obj["Metadata"]
    out["too_large"] = post_form(post["fields"], "big.png", os.urandom(1_000_001))
    out["big_stored"] = error_of(lambda: s3.head_object(Bucket=bucket, Key="forms/big.png"))
    changed = dict(post["fields"], **{"Content-Type": "text/html"})
    out["changed_type"] = post_form(changed, "evil.html", b"<script></script>")
    return out


def cmd_encryption(args):
    """Server-side encryption as boto3 sends it: SSE-S3 on put_object and as the bucket default
    (put_bucket_encryption), SSE-C on put/get/head (boto3 adds the key's MD5), a multipart
    upload_file with SSE-C (the key on every part), a copy from SSE-C to SSE-S3, and the errors
    of a missing or wrong key."""
    import hashlib

    bucket = args["bucket"]
    s3 = client()
    s3.create_bucket(Bucket=bucket)
    data = os.urandom(args["size"])
    key = os.urandom(32)
    wrong = os.urandom(32)
    out = {}
    r = s3.put_object(Bucket=bucket, Key="s3.bin", Body=data, ServerSideEncryption="AES256")
    out["s3_put"] = [r.get("ServerSideEncryption"), r["ETag"].strip('"') == hashlib.md5(data).hexdigest()]
    got = s3.get_object(Bucket=bucket, Key="s3.bin", Range="bytes=100-200099")
    out["s3_range"] = [got["ServerSideEncryption"], got["Body"].read() == data[100:200100]]
    c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    s3.put_object(Bucket=bucket, Key="c.bin", Body=data, **c)
    out["c_get"] = s3.get_object(Bucket=bucket, Key="c.bin", **c)["Body"].read() == data
    out["c_head"] = s3.head_object(Bucket=bucket, Key="c.bin", **c)["SSECustomerAlgorithm"]
    out["c_without"] = error_of(lambda: s3.get_object(Bucket=bucket, Key="c.bin"))
    out["c_wrong"] = error_of(lambda: s3.get_object(Bucket=bucket, Key="c.bin", SSECustomerAlgorithm="AES256", SSECustomerKey=wrong))
    path = os.path.join(args["dir"], "big.bin")
    with open(path, "wb") as f:
        f.write(data * 3)
    from boto3.s3.transfer import TransferConfig

    transfer = TransferConfig(multipart_threshold=8 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024)
    s3.upload_file(path, bucket, "multi.bin", ExtraArgs=c, Config=transfer)
    multi = s3.get_object(Bucket=bucket, Key="multi.bin", **c)
    out["multi"] = [multi["ETag"].strip('"').endswith(f"-{-(-len(data) * 3 // (8 * 1024 * 1024))}"), multi["Body"].read() == data * 3]
    s3.copy_object(
        Bucket=bucket,
        Key="copied.bin",
        CopySource={"Bucket": bucket, "Key": "c.bin"},
        CopySourceSSECustomerAlgorithm="AES256",
        CopySourceSSECustomerKey=key,
        ServerSideEncryption="AES256",
    )
    copied = s3.get_object(Bucket=bucket, Key="copied.bin")
    out["copied"] = [copied["ServerSideEncryption"], copied["Body"].read() == data]
    s3.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
    )
    rule = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    out["default"] = rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"]
    out["by_default"] = s3.put_object(Bucket=bucket, Key="default.bin", Body=b"d").get("ServerSideEncryption")
    s3.delete_bucket_encryption(Bucket=bucket)
    out["no_default"] = error_of(lambda: s3.get_bucket_encryption(Bucket=bucket))
    return out


COMMANDS = {
    "transfer": cmd_transfer,
    "checksums": cmd_checksums,
    "copy-delete": cmd_copy_delete,
    "create-bucket": cmd_create_bucket,
    "roundtrip": cmd_roundtrip,
    "put-many": cmd_put_many,
    "list": cmd_list,
    "overwrite-delete": cmd_overwrite_delete,
    "head": cmd_head,
    "versioning": cmd_versioning,
    "many-versions": cmd_many_versions,
    "bucket-settings": cmd_bucket_settings,
    "lifecycle": cmd_lifecycle,
    "object-lock": cmd_object_lock,
    "access-keys": cmd_access_keys,
    "bucket-policy": cmd_bucket_policy,
    "sigv2": cmd_sigv2,
    "presigned-post": cmd_presigned_post,
    "encryption": cmd_encryption,
    "conditional-writes": cmd_conditional_writes,
    "session-token": cmd_session_token,
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(COMMANDS)}}} < args.json")
    args = json.load(sys.stdin)
    json.dump(COMMANDS[sys.argv[1]](args), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
