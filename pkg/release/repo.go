package release

import "strings"

// ValidRepo reports whether repo is "org/project" with two parts that GitHub
// allows: ASCII letters, digits, '.', '_' and '-', and neither "." nor "..".
func ValidRepo(repo string) bool {
	org, project, ok := strings.Cut(repo, "/")
	return ok && validRepoPart(org) && validRepoPart(project)
}

func validRepoPart(s string) bool {
	return s != "" && s != "." && s != ".." && SafeName(s)
}

// SafeName reports whether s holds only ASCII letters, digits, '.', '_' and
// '-': safe in a URL path, a Redis key and a JSON key alike.
func SafeName(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// MaxKey bounds an app's key.
const MaxKey = 100

// ValidKey reports whether s can be an app's key (CRAFT_APPS_RELEASE_APPS
// lowers them): 1 to MaxKey of lowercase ASCII letters, digits, '.', '_'
// and '-'.
func ValidKey(s string) bool {
	return s != "" && len(s) <= MaxKey && SafeName(s) && strings.ToLower(s) == s
}
