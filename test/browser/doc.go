// Package browser loads the release page, GET /, in a real headless Chromium
// driven over the DevTools protocol: no console error, no CSP violation,
// every app and version on it, each download button a working redirect, and
// hostile release names and notes shown as text. It writes screenshots at
// desktop and phone width to screenshots/ (git-ignored). It has no code of
// its own outside its tests.
package browser
