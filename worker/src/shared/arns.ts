// The ARNs a bucket's configuration names the gateway's targets by, as the Worker checks them and
// the console writes them: event notifications to an operator's webhook or Cloudflare Queue,
// replication to a bucket of this gateway or to a bucket on an operator's remote target.

/** `arn:shardgate:webhook::NAME`: a webhook of SHARDGATE_WEBHOOKS. */
export const WEBHOOK_ARN_PREFIX = "arn:shardgate:webhook::";
/** `arn:shardgate:queue::BINDING`: a Queue binding that SHARDGATE_QUEUES names (on Cloudflare). */
export const QUEUE_ARN_PREFIX = "arn:shardgate:queue::";
/** `arn:aws:s3:::BUCKET`: a bucket of this gateway. */
export const LOCAL_ARN_PREFIX = "arn:aws:s3:::";
/** `arn:shardgate:s3:::TARGET/BUCKET`: a bucket on a remote target of SHARDGATE_REPLICATION_TARGETS. */
export const REMOTE_ARN_PREFIX = "arn:shardgate:s3:::";
