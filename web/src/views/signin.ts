import { messageOf } from "../errors";
import { type Credentials, S3Client, type Session, startSession } from "../s3";
import { h, mount, openDialog } from "../ui";

/**
 * The access key form: `act` gets the key entered (by default: exchanged for temporary credentials,
 * STS GetSessionToken on the gateway, which a ListBuckets checks); the secret itself is kept
 * nowhere, not even in memory, once `act` has used it.
 */
function keyForm(
  endpoint: string,
  opts: { accessKeyId?: string; submit: string; done?: (s: Session) => void; act?: (key: Credentials) => Promise<void> },
): {
  form: HTMLFormElement;
  focus(): void;
} {
  const access = h("input", {
    id: "access-key",
    name: "access-key",
    autocomplete: "username",
    required: true,
    spellcheck: false,
    autocapitalize: "off",
    value: opts.accessKeyId ?? "",
    readonly: opts.accessKeyId !== undefined,
  });
  const secret = h("input", { id: "secret-key", name: "secret-key", type: "password", autocomplete: "current-password", required: true });
  const error = h("p", { class: "error", role: "alert" });
  const button = h("button", { type: "submit", class: "primary" }, opts.submit);
  const form = h(
    "form",
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        button.disabled = true;
        error.textContent = "";
        try {
          const key = { accessKeyId: access.value.trim(), secretAccessKey: secret.value };
          if (opts.act) {
            await opts.act(key);
            secret.value = "";
            return;
          }
          const session = await startSession(endpoint, key);
          secret.value = "";
          await new S3Client(session, endpoint).listBuckets();
          opts.done?.(session);
        } catch (err) {
          error.textContent = messageOf(err);
          button.disabled = false;
        }
      },
    },
    h("label", { for: "access-key" }, "Access key"),
    access,
    h("label", { for: "secret-key" }, "Secret key"),
    secret,
    error,
    button,
  );
  return { form, focus: () => (opts.accessKeyId === undefined ? access : secret).focus() };
}

/** The sign-in page. */
export function renderSignIn(root: HTMLElement, endpoint: string, done: (s: Session) => void, note = ""): void {
  const { form, focus } = keyForm(endpoint, { submit: "Sign in", done });
  form.classList.add("card", "signin");
  form.setAttribute("aria-labelledby", "signin-title");
  form.prepend(
    h("h1", { id: "signin-title" }, h("span", { class: "logo", "aria-hidden": "true" }, "◆"), " shardgate"),
    ...(note ? [h("p", { class: "note", role: "status" }, note)] : []),
    h(
      "p",
      { class: "muted" },
      "Sign in with an S3 access key and secret key of the gateway. The console keeps only temporary credentials made from them, in this page's memory, for an hour at most: reloading the page or signing out forgets them.",
    ),
    h(
      "p",
      { class: "muted" },
      "A gateway started with npm start, npm run dev or the shardgate binary and no keys set makes its root key at its first start: its banner shows it, and it is kept in the file credentials of its data directory (by default .shardgate/credentials; .wrangler/state/credentials under npm run dev).",
    ),
  );
  mount(root, h("main", { class: "signin-page" }, form));
  focus();
}

/** Asks for the secret again before the session ends; resolves the new session, or null when dismissed. */
export async function renewSession(endpoint: string, accessKeyId: string, minutesLeft: number): Promise<Session | null> {
  let renewed: Session | null = null;
  const { form, focus } = keyForm(endpoint, {
    accessKeyId,
    submit: "Continue",
    done: (s) => {
      renewed = s;
      dialog.close();
    },
  });
  const text =
    minutesLeft > 0
      ? `This session ends in ${minutesLeft} minute${minutesLeft === 1 ? "" : "s"}. Enter the secret key to keep working.`
      : "This session has ended. Enter the secret key to keep working.";
  const { dialog, closed } = openDialog("Session ending", h("div", { class: "renew" }, h("p", null, text), form));
  focus();
  await closed;
  return renewed;
}

/**
 * A client signing with the key's own secret, asked for now (S3Client.askForKey): the gateway
 * refuses temporary credentials what would outlast them (`why`: its words), a bucket's settings and
 * the admin API's changes. The secret signs that one change and is kept nowhere. Null when dismissed
 * (Cancel, Close or Escape).
 */
export async function askForKey(endpoint: string, accessKeyId: string, why: string): Promise<S3Client | null> {
  let client: S3Client | null = null;
  const { form, focus } = keyForm(endpoint, {
    accessKeyId,
    submit: "Continue",
    act: async (key) => {
      // A wrong secret is said here, where it was typed (ListBuckets: any key may).
      const checked = new S3Client(key, endpoint);
      await checked.listBuckets();
      client = checked;
      dialog.close();
    },
  });
  const { dialog, closed } = openDialog(
    "Secret key needed",
    h(
      "div",
      { class: "renew" },
      h(
        "p",
        null,
        `${why} The console's temporary credentials may not make what lasts longer than they do. The secret signs this change only and is not kept.`,
      ),
      form,
    ),
  );
  // Cancel: the change is not made (S3Client says so where the view shows its errors).
  form.append(h("button", { type: "button", onclick: () => dialog.close() }, "Cancel"));
  focus();
  await closed;
  return client;
}
