// Versioning in the console: the bucket's switch (enable, suspend) above its listing, and an
// object's versions in its dialog (download one, restore one as the current version, delete one
// for good), delete markers included.
import { messageOf } from "../errors";
import type { App } from "../app";
import { lockState } from "../protection";
import type { ObjectVersion, VersioningStatus } from "../s3";
import { confirmDialog, h, humanDate, humanSize, mount, toast } from "../ui";

const STATUS_TEXT: Record<string, string> = {
  Enabled: "Versioning is on: every upload and delete keeps the previous versions.",
  Suspended: "Versioning is suspended: uploads replace the null version; earlier versions are kept.",
  off: "Versioning is off: an upload or delete replaces the object for good.",
};

/** The bucket's versioning state and the button that changes it. */
export function versioningSwitch(app: App, bucket: string): HTMLElement {
  const text = h("span", { class: "small", role: "status", id: "versioning-status" }, "Versioning: …");
  const button = h("button", { type: "button", class: "small", id: "versioning-toggle", hidden: true });
  const el = h("div", { class: "versioning row" }, text, button);
  let status: VersioningStatus = null;
  const show = () => {
    text.textContent = STATUS_TEXT[status ?? "off"] ?? "";
    button.textContent = status === "Enabled" ? "Suspend versioning" : "Enable versioning";
    button.hidden = false;
  };
  button.addEventListener("click", async () => {
    const next = status === "Enabled" ? "Suspended" : "Enabled";
    if (
      status === null &&
      !(await confirmDialog(
        "Enable versioning",
        `Keep every version of the objects in “${bucket}”? Once enabled, versioning can be suspended but not turned off.`,
        "Enable",
      ))
    )
      return;
    try {
      await app.s3.setVersioning(bucket, next);
      status = next;
      show();
      toast(next === "Enabled" ? "Versioning enabled." : "Versioning suspended.");
    } catch (err) {
      toast(messageOf(err), "error");
    }
  });
  void Promise.all([app.s3.getVersioning(bucket), lockState(app.s3, bucket)]).then(
    ([s, lock]) => {
      status = s;
      show();
      // Object lock keeps versioning on for good: nothing to switch.
      if (lock) {
        text.textContent = "Versioning is on for good (the bucket has object lock): every upload and delete keeps the previous versions.";
        button.hidden = true;
      }
    },
    (err) => (text.textContent = messageOf(err)),
  );
  return el;
}

/** An object's versions, newest first, with what can be done to each. */
export async function renderVersions(app: App, el: HTMLElement, bucket: string, key: string, changed: () => void): Promise<void> {
  let versions: ObjectVersion[];
  try {
    versions = await app.s3.listKeyVersions(bucket, key);
  } catch (err) {
    mount(el, h("p", { class: "error" }, messageOf(err)));
    return;
  }
  const reload = () => {
    changed();
    void renderVersions(app, el, bucket, key, changed);
  };
  if (versions.length <= 1 && versions.every((v) => v.versionId === "null" && !v.deleteMarker)) {
    mount(el, h("p", { class: "muted small" }, "Only the current version exists (turn versioning on in the bucket to keep earlier ones)."));
    return;
  }
  const name = key.split("/").pop() || key;
  mount(
    el,
    h(
      "ul",
      { class: "versions", "aria-label": `Versions of ${name}` },
      versions.map((v) =>
        h("li", { class: `version${v.isLatest ? " latest" : ""}${v.deleteMarker ? " marker" : ""}` }, versionRow(app, bucket, key, v, reload)),
      ),
    ),
  );
}

function versionRow(app: App, bucket: string, key: string, v: ObjectVersion, reload: () => void): HTMLElement[] {
  const label = v.deleteMarker ? "Delete marker" : humanSize(v.size);
  return [
    h("span", { class: "version-id mono small", title: v.versionId }, v.versionId === "null" ? "null" : v.versionId.slice(0, 12)),
    h("span", { class: "version-date small" }, humanDate(v.lastModified)),
    h("span", { class: "version-size small" }, label),
    v.isLatest ? h("span", { class: "badge" }, "current") : h("span", null),
    h("span", { class: "row" }, versionActions(app, bucket, key, v, reload)),
  ];
}

/** Download and Restore (a version that is not the current one), and Delete (versions and delete markers). */
function versionActions(app: App, bucket: string, key: string, v: ObjectVersion, reload: () => void): HTMLElement[] {
  const actions: HTMLElement[] = [];
  if (!v.deleteMarker) {
    const download = h("a", { class: "button small", href: "#", "aria-label": `Download version ${v.versionId}` }, "Download");
    void app.s3.presign(bucket, key, 3600, { versionId: v.versionId, "response-content-disposition": "attachment" }).then((u) => (download.href = u));
    actions.push(download);
    if (!v.isLatest) {
      const restore = async () => {
        try {
          await app.s3.restoreVersion(bucket, key, v.versionId);
          toast("Version restored: it is now the current version.");
          reload();
        } catch (err) {
          toast(messageOf(err), "error");
        }
      };
      actions.push(h("button", { type: "button", class: "small", "aria-label": `Restore version ${v.versionId}`, onclick: restore }, "Restore"));
    }
  }
  const what = v.deleteMarker ? "delete marker" : "version";
  const remove = async () => {
    const consequence = v.deleteMarker && v.isLatest ? " The version before it becomes current again." : " This cannot be undone.";
    if (!(await confirmDialog(`Delete ${what}`, `Delete this ${what} of “${key}” for good?${consequence}`, "Delete"))) return;
    try {
      await app.s3.deleteVersion(bucket, key, v.versionId);
      toast(`The ${what} was deleted.`);
      reload();
    } catch (err) {
      toast(messageOf(err), "error");
    }
  };
  actions.push(h("button", { type: "button", class: "small danger", "aria-label": `Delete version ${v.versionId}`, onclick: remove }, "Delete"));
  return actions;
}
