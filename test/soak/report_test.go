package soak

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// reportFiles are the entries a soak writes into the report directory.
var reportFiles = []string{"summary.json", "answers.jsonl", "github.jsonl", "timeline.png", "logs"}

// writeReport writes the report directory: summary.json (every figure and
// every failure), answers.jsonl and github.jsonl (every answer and every
// GitHub request), and timeline.png.
func (s *soak) writeReport(r *report) error {
	if err := os.MkdirAll(s.set.Report, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.set.Report, "summary.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := writeLines(filepath.Join(s.set.Report, "answers.jsonl"), s.answers); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(s.set.Report, "github.jsonl"), s.requests); err != nil {
		return err
	}
	return s.timeline(r, filepath.Join(s.set.Report, "timeline.png"))
}

func writeLines[T any](path string, items []T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The colours of the faults (bands and the fault panel) and of the series.
var (
	kindColor = map[string]color.RGBA{
		faultPollerKill:  {R: 0xe4, G: 0x1a, B: 0x1c, A: 0xff},
		faultPrimaryKill: {R: 0x98, G: 0x4e, B: 0xa3, A: 0xff},
		faultFlush:       {R: 0xff, G: 0x7f, B: 0x00, A: 0xff},
		faultSilent:      {R: 0xa6, G: 0x56, B: 0x28, A: 0xff},
		faultGitHub500:   {R: 0x37, G: 0x7e, B: 0xb8, A: 0xff},
		faultSlow:        {R: 0x4d, G: 0xaf, B: 0x4a, A: 0xff},
		faultRateLimit:   {R: 0xf7, G: 0x81, B: 0xbf, A: 0xff},
		faultGarbage:     {R: 0x99, G: 0x99, B: 0x99, A: 0xff},
		faultNotFound:    {R: 0x1f, G: 0x78, B: 0xb4, A: 0xff},
		faultAhead:       {R: 0xb1, G: 0x59, B: 0x28, A: 0xff},
		faultPoison:      {R: 0x00, G: 0x00, B: 0x00, A: 0xff},
		faultOversized:   {R: 0xcc, G: 0xcc, B: 0x00, A: 0xff},
		faultClockStep:   {R: 0x66, G: 0xc2, B: 0xa5, A: 0xff},
		faultQuotaFar:    {R: 0x8d, G: 0xa0, B: 0xcb, A: 0xff},
		faultBigRefresh:  {R: 0xe7, G: 0x8a, B: 0xc3, A: 0xff},
	}
	seriesColor = []color.RGBA{
		{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff},
		{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff},
		{R: 0x75, G: 0x70, B: 0xb3, A: 0xff},
		{R: 0xe7, G: 0x29, B: 0x8a, A: 0xff},
	}
)

// timeline draws four panels over the same time axis (seconds since the
// load began): the faults, one row per kind; the pods' answers per second;
// every GitHub request, one row per app, by outcome; each release's lag to each pod,
// at the time it was published. Faults are bands behind the last three.
func (s *soak) timeline(r *report, path string) error {
	t0 := s.began
	sec := func(t interface{ Sub(time.Time) time.Duration }) float64 { return t.Sub(t0).Seconds() }
	end := math.Ceil(s.loadEnded.Sub(t0).Seconds())
	bins := int(end) + 1
	band := bands{faults: s.faults, x: func(f fault) (float64, float64) { return f.Start.Sub(t0).Seconds(), f.End.Sub(t0).Seconds() }}

	// Faults, one row per kind.
	pf := newPanel("Faults injected (seeded schedule)", "", end)
	pf.Y.Min, pf.Y.Max = -0.5, float64(len(faultKinds))-0.5
	ticks := make([]plot.Tick, len(faultKinds))
	for i, k := range faultKinds {
		ticks[i] = plot.Tick{Value: float64(len(faultKinds) - 1 - i), Label: k}
	}
	pf.Y.Tick.Marker = plot.ConstantTicks(ticks)
	pf.Add(gantt{faults: s.faults, x: band.x, row: func(kind string) float64 {
		for i, k := range faultKinds {
			if k == kind {
				return float64(len(faultKinds) - 1 - i)
			}
		}
		return 0
	}})
	pf.Add(plotter.NewGrid())

	// Answers per second, per pod, and the bad ones.
	pa := newPanel("Answers per second, per API pod (bad answers in black)", "answers/s", end)
	pa.Add(band)
	for i, pod := range s.pods {
		counts := make([]float64, bins)
		for _, a := range s.answers {
			if a.Pod == pod.name {
				if b := int(sec(a.End)); b >= 0 && b < bins {
					counts[b]++
				}
			}
		}
		if err := addLine(pa, pod.name, counts, seriesColor[i]); err != nil {
			return err
		}
	}
	bad := make([]float64, bins)
	for _, a := range s.answers {
		if b := int(sec(a.End)); a.Bad != "" && b >= 0 && b < bins {
			bad[b]++
		}
	}
	if err := addLine(pa, fmt.Sprintf("bad (%d)", r.BadAnswers), bad, color.RGBA{A: 0xff}); err != nil {
		return err
	}
	pa.Y.Min, pa.Y.Max = 0, float64(workersPerPod)*float64(time.Second/loadPace)*1.5
	pa.Legend.Left = false

	// GitHub requests: one row per app, one mark per request, coloured by outcome.
	pg := newPanel(fmt.Sprintf("GitHub requests, one row per app, one mark per request (%d in all; interval %v)", r.GitHubRequests, interval), "", end)
	pg.Add(band)
	pg.Y.Min, pg.Y.Max = -0.7, float64(len(apps))+0.2
	appTicks := make([]plot.Tick, len(apps))
	row := make(map[string]float64, len(apps))
	for i, a := range apps {
		row[a.Repo] = float64(len(apps) - 1 - i)
		appTicks[i] = plot.Tick{Value: row[a.Repo], Label: a.Key}
	}
	pg.Y.Tick.Marker = plot.ConstantTicks(appTicks)
	classes := []string{"200", "304", "rate limited", "error"} // error: 5xx, no answer, garbage
	for i, class := range classes {
		var pts plotter.XYs
		for _, q := range s.requests {
			c := outcome(q)
			if c == "no answer" || c == "garbage" {
				c = "error"
			}
			if y, ok := row[q.Repo]; ok && c == class && sec(q.At) >= 0 && sec(q.At) <= end {
				pts = append(pts, plotter.XY{X: sec(q.At), Y: y - 0.3 + 0.2*float64(i)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: seriesColor[i], Radius: vg.Points(3.5), Shape: draw.BoxGlyph{}}
		pg.Add(sc)
		pg.Legend.Add(fmt.Sprintf("%s (%d)", class, len(pts)), sc)
	}
	pg.Legend.Left = false

	// Release lag per pod.
	pl := newPanel(fmt.Sprintf("Lag of each release to each pod, at its publication (worst %.1fs)", r.WorstLag.LagS[r.WorstLagPod]),
		"lag (s)", end)
	pl.X.Label.Text = "seconds since the load began"
	pl.Add(band)
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}}
	for i, pod := range s.pods {
		var pts plotter.XYs
		for _, rl := range r.Releases {
			if lag, ok := rl.LagS[pod.name]; ok {
				pts = append(pts, plotter.XY{X: sec(rl.At), Y: lag})
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: seriesColor[i], Radius: vg.Points(3.5), Shape: shapes[i%len(shapes)]}
		pl.Add(sc)
		pl.Legend.Add(pod.name, sc)
	}
	pl.Y.Min = 0
	pl.Y.Max = math.Max(1, r.WorstLag.LagS[r.WorstLagPod]) * 1.35
	pl.Legend.Left = false

	for _, p := range []*plot.Plot{pf, pa, pg, pl} {
		p.X.Min, p.X.Max = 0, end // Add widened them to the data
		p.X.Tick.Marker = stepTicks(end)
	}
	const w, h = 14 * vg.Inch, 13 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	plots := [][]*plot.Plot{{pf}, {pa}, {pg}, {pl}}
	canvases := plot.Align(plots, draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(8), PadBottom: vg.Points(8),
		PadLeft: vg.Points(8), PadRight: vg.Points(8), PadY: vg.Points(14)}, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stepTicks marks the time axis every 5, 10, 20 or 30 s, whichever gives
// at most 20 marks.
func stepTicks(end float64) plot.Ticker {
	step := 30.0
	for _, st := range []float64{5, 10, 20, 30} {
		if end/st <= 20 {
			step = st
			break
		}
	}
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ticks []plot.Tick
		for x := math.Ceil(lo/step) * step; x <= hi; x += step {
			ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprintf("%g", x)})
		}
		return ticks
	})
}

func newPanel(title, ylabel string, end float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = 0, end
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p
}

// addLine adds counts[i] at x = i + 0.5 as a line named name.
func addLine(p *plot.Plot, name string, counts []float64, c color.RGBA) error {
	pts := make(plotter.XYs, len(counts))
	for i, v := range counts {
		pts[i] = plotter.XY{X: float64(i) + 0.5, Y: v}
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.3)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// bands draws each fault as a pale band over the whole height of a panel.
type bands struct {
	faults []fault
	x      func(fault) (float64, float64)
}

func (b bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, f := range b.faults {
		x0, x1 := b.x(f)
		l, r := trX(x0), trX(x1)
		if r-l < 2 {
			r = l + 2
		}
		k := kindColor[f.Kind]
		fillRect(c, color.NRGBA{R: k.R, G: k.G, B: k.B, A: 0x40}, l, r, c.Min.Y, c.Max.Y)
	}
}

// gantt draws each fault as a bar in its kind's row.
type gantt struct {
	faults []fault
	x      func(fault) (float64, float64)
	row    func(kind string) float64
}

func (g gantt) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, f := range g.faults {
		x0, x1 := g.x(f)
		l, r := trX(x0), trX(x1)
		if r-l < 3 {
			r = l + 3
		}
		y := g.row(f.Kind)
		fillRect(c, kindColor[f.Kind], l, r, trY(y-0.35), trY(y+0.35))
	}
}

// fillRect fills the rectangle from (l, lo) to (r, hi), clipped to c.
func fillRect(c draw.Canvas, col color.Color, l, r, lo, hi vg.Length) {
	c.FillPolygon(col, c.ClipPolygonX([]vg.Point{{X: l, Y: lo}, {X: r, Y: lo}, {X: r, Y: hi}, {X: l, Y: hi}}))
}
