// What every direct-path service receives (services/direct-*.ts): kept apart so that they import it
// from here, not from each other.
import type { ObjectContext } from "./objects";

/** What the direct path needs beyond an object write: the secret its tickets are signed with, and who asks. */
export interface DirectContext extends ObjectContext {
  rootSecret: string;
  /** The access key id of the request (null: anonymous): shard tickets name it, and are checked against it on use. */
  holder: string | null;
  /** The latest a ticket may last: when the request's temporary credentials expire (Infinity for long-term keys). */
  until: number;
}
