// Get/Put/DeleteBucketTagging and Get/Put/DeleteBucketEncryption: a bucket's tags and its default
// encryption, each kept as a setting of the bucket (api/http/setting-operations.ts).
import { S3Error } from "../../s3-error";
import { settingOperations } from "../http/setting-operations";
import { MAX_BUCKET_TAGS, parseTaggingXml, renderTagging, type Tags } from "../format/tags";
import { xmlDocument } from "../format/xml";
import { childrenNamed, childText, malformedXml, readXml } from "../format/xml-parse";

/** Get/Put/DeleteBucketTagging: a bucket's tags. An empty tag set is no tag set (a Get then answers NoSuchTagSet). */
export const bucketTagging = settingOperations<Tags>({
  name: "tags",
  read: async (body) => {
    const tags = await parseTaggingXml(body, MAX_BUCKET_TAGS);
    return tags.length > 0 ? tags : null;
  },
  render: renderTagging,
  missing: ["NoSuchTagSet", "The TagSet does not exist"],
  putStatus: 204,
});

/**
 * Get/Put/DeleteBucketEncryption: a bucket's default server-side encryption. AES256 (SSE-S3) is
 * applied to every new object that does not ask for SSE-C itself (services/encryption.ts); SSE-KMS
 * is refused by name.
 */
const SSE_S3_RULE =
  "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false</BucketKeyEnabled></Rule>";
export const bucketEncryption = settingOperations<{ algorithm: "AES256" }>({
  name: "encryption",
  read: async (body) => {
    const doc = await readXml(body);
    if (doc.name !== "ServerSideEncryptionConfiguration") throw malformedXml();
    const rules = childrenNamed(doc, "Rule");
    if (rules.length !== 1) throw malformedXml();
    const apply = childrenNamed(rules[0] as (typeof rules)[number], "ApplyServerSideEncryptionByDefault")[0];
    const algorithm = (apply ? childText(apply, "SSEAlgorithm") : undefined) ?? "";
    if (algorithm.startsWith("aws:kms")) throw new S3Error("NotImplemented", "SSE-KMS is not supported: use AES256 (SSE-S3).");
    if (algorithm !== "AES256") throw malformedXml();
    return { algorithm };
  },
  render: () => xmlDocument("ServerSideEncryptionConfiguration", SSE_S3_RULE),
  missing: ["ServerSideEncryptionConfigurationNotFoundError", "The server side encryption configuration was not found"],
});
