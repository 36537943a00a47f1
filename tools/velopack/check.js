// Runs Velopack's own update check (the npm package "velopack", its Rust
// UpdateManager and HttpSource) against feeds served at the base URLs given
// after the install directory, for an app installed there (the test writes
// its manifest; testkit.VelopackCheck runs it). Prints one line, "RESULTS "
// and a JSON array: for each URL, the update's target package, null for
// none, or the check's error.
"use strict";
const path = require("node:path");
const velopack = require("velopack");

const [dir, ...urls] = process.argv.slice(2);
if (typeof velopack.setVelopackLogger === "function") {
  velopack.setVelopackLogger(() => {});
}
const locator = {
  RootAppDir: dir,
  UpdateExePath: path.join(dir, "Update"),
  PackagesDir: path.join(dir, "packages"),
  ManifestPath: path.join(dir, "current", "sq.version"),
  CurrentBinaryDir: path.join(dir, "current"),
  IsPortable: true,
};

(async () => {
  const results = [];
  for (const url of urls) {
    try {
      const um = new velopack.UpdateManager(url, undefined, locator);
      const update = await um.checkForUpdatesAsync();
      const target = update ? update.TargetFullRelease : null;
      results.push({ target: target && { Version: target.Version, Type: target.Type, FileName: target.FileName } });
    } catch (e) {
      results.push({ error: String((e && e.message) || e) });
    }
  }
  console.log("RESULTS " + JSON.stringify(results));
})();
