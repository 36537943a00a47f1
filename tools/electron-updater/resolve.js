// Reads channel files with electron-updater's own code, in plain Node (the
// provider module needs no Electron), as its generic provider does after
// fetching one: parseUpdateInfo (js-yaml's load), the version check of
// AppUpdater.isUpdateAvailable (node-semver's parse), then resolveFiles
// against the feed's base URL. testkit.ElectronResolve runs it.
//
// stdin:  {"base": "<feed URL>", "files": ["<base64 of a file>", ...]}, each
//         file decoded from UTF-8 as the updater decodes a response
//         (setEncoding("utf8"): a malformed byte reads as U+FFFD)
// stdout: one answer per file, in order:
//   {"ok": true, "version": "...",
//    "files": [{"url": "<resolved URL>", "sha512": "..."}, ...],
//    "package": {"path": "<resolved URL>", "sha512": "..."} | null}
//   or {"ok": false, "error": "..."}
// "package" is the web installer's package for this machine's arch (or
// ia32), as the updater picks it.
"use strict"

const { parseUpdateInfo, resolveFiles } = require("electron-updater/out/providers/Provider")
const { newBaseUrl } = require("electron-updater/out/util")
// The node-semver electron-updater itself loads.
const semver = require(require.resolve("semver", { paths: [require.resolve("electron-updater")] }))

function read(text, baseUrl) {
  const info = parseUpdateInfo(text, "latest.yml", baseUrl)
  // The updater reads info.version next; a file that is no mapping fails there.
  if (info == null || semver.parse(info.version) == null) {
    throw new Error(`not a valid semver version: ${JSON.stringify(info == null ? info : info.version)}`)
  }
  const resolved = resolveFiles(info, baseUrl)
  const pkg = resolved[0].packageInfo
  return {
    ok: true,
    version: info.version,
    files: resolved.map(f => ({ url: f.url.href, sha512: f.info.sha512 ?? null })),
    package: pkg == null ? null : { path: pkg.path, sha512: pkg.sha512 ?? null },
  }
}

let input = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", chunk => (input += chunk))
process.stdin.on("end", () => {
  const { base, files } = JSON.parse(input)
  const baseUrl = newBaseUrl(base)
  const answers = files.map(file => {
    try {
      return read(Buffer.from(file, "base64").toString("utf8"), baseUrl)
    } catch (e) {
      return { ok: false, error: String((e && e.message) || e).slice(0, 300) }
    }
  })
  process.stdout.write(JSON.stringify(answers))
})
