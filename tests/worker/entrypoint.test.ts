// workerd (`wrangler dev`, deploys) refuses a main module that exports anything but handlers and
// classes, while the test pool would not notice: guard it here.
import { describe, expect, it } from "vitest";
import * as main from "../../worker/src/index";

describe("worker/src/index.ts exports", () => {
  it("exports a fetch handler as default and nothing that is not a class or handler", () => {
    expect(typeof main.default.fetch).toBe("function");
    for (const [name, value] of Object.entries(main)) {
      const ok = typeof value === "function" || (typeof value === "object" && value !== null && "fetch" in value);
      expect(ok, `export ${name} is a ${typeof value}`).toBe(true);
    }
  });
});
