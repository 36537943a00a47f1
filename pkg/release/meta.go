package release

// Bulletin is what launchers are told next to the apps: the app renames, the
// repository renames and the important notices that are live. The pollers
// read it from MySQL and share it through Redis; the API serves it. Nil lists
// are served as empty ones.
type Bulletin struct {
	AppRenames  []AppRename
	RepoRenames []RepoRename
	Notices     Notices
}
