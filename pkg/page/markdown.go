package page

import (
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// newMarkdown returns goldmark with GitHub's extensions (tables, task lists,
// strikethrough, bare links) and a renderer that writes raw HTML as text and
// images as links: release notes are untrusted, and the page loads nothing
// from elsewhere.
func newMarkdown() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		// goldmark's own HTML renderer has priority 1000; a lower one wins.
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(untrusted{}, 100))),
	)
}

// untrusted renders the nodes whose default rendering would let the notes'
// author put HTML or a remote resource on the page.
type untrusted struct{}

func (untrusted) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindRawHTML, rawHTML)
	r.Register(ast.KindHTMLBlock, htmlBlock)
	r.Register(ast.KindImage, image)
}

// rawHTML writes inline HTML (<img onerror=…>) as the text it is.
func rawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := node.(*ast.RawHTML).Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
		}
	}
	return ast.WalkSkipChildren, nil
}

// htmlBlock writes a block of HTML (<script>…</script>) as preformatted text.
func htmlBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if entering {
		_, _ = w.WriteString("<pre><code>")
		lines := n.Lines()
		for i := range lines.Len() {
			line := lines.At(i)
			_, _ = w.Write(util.EscapeHTML(line.Value(source)))
		}
		return ast.WalkContinue, nil
	}
	if n.HasClosure() {
		_, _ = w.Write(util.EscapeHTML(n.ClosureLine.Value(source)))
	}
	_, _ = w.WriteString("</code></pre>\n")
	return ast.WalkContinue, nil
}

// image writes ![alt](url) as a link to url whose text is alt, or "image"
// when alt is empty.
func image(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Image)
	if !entering {
		_, _ = w.WriteString("</a>")
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString(`<a href="`)
	if dest := util.URLEscape(n.Destination, true); !html.IsDangerousURL(dest) {
		_, _ = w.Write(util.EscapeHTML(dest))
	}
	_, _ = w.WriteString(`">`)
	if n.FirstChild() == nil {
		_, _ = w.WriteString("image")
	}
	return ast.WalkContinue, nil
}

// newPolicy returns the sanitiser of the rendered notes: bluemonday's policy
// for user content, with links to absolute http, https and mailto URLs only,
// marked nofollow and noreferrer.
func newPolicy() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowRelativeURLs(false)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	return p
}
