package release

// Bulletin is what launchers are told next to the apps: the app renames, the
// repository renames and the important notices that are live. The pollers
// read it from MySQL and share it through Redis; the API serves it. Nil lists
// are served as empty ones. It also carries the operators' Decisions on
// releases, by app key (only apps with one), which the API applies.
type Bulletin struct {
	AppRenames  []AppRename
	RepoRenames []RepoRename
	Notices     Notices
	Decisions   map[string]Decisions
}
