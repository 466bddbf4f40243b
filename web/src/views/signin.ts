import { messageOf } from "../errors";
import { S3Client, type Credentials } from "../s3";
import { h, mount } from "../ui";

/** The sign-in form: checks the keys with a ListBuckets before keeping them for this tab. */
export function renderSignIn(root: HTMLElement, done: (c: Credentials) => void): void {
  const access = h("input", { id: "access-key", name: "access-key", autocomplete: "username", required: true, spellcheck: false, autocapitalize: "off" });
  const secret = h("input", { id: "secret-key", name: "secret-key", type: "password", autocomplete: "current-password", required: true });
  const error = h("p", { class: "error", role: "alert" });
  const button = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h(
    "form",
    {
      class: "card signin",
      "aria-labelledby": "signin-title",
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const creds = { accessKeyId: access.value.trim(), secretAccessKey: secret.value };
        button.disabled = true;
        error.textContent = "";
        try {
          await new S3Client(creds).listBuckets();
          done(creds);
        } catch (err) {
          error.textContent = messageOf(err);
          button.disabled = false;
        }
      },
    },
    h("h1", { id: "signin-title" }, h("span", { class: "logo", "aria-hidden": "true" }, "◆"), " shardgate"),
    h(
      "p",
      { class: "muted" },
      "Sign in with the gateway's S3 access key and secret key. They stay in this browser tab only and are forgotten when you sign out or close the tab.",
    ),
    h("label", { for: "access-key" }, "Access key"),
    access,
    h("label", { for: "secret-key" }, "Secret key"),
    secret,
    error,
    button,
  );
  mount(root, h("main", { class: "signin-page" }, form));
  access.focus();
}
