package soak

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var reportFiles = []string{"summary.json", "answers.jsonl", "github.jsonl", "timeline.png", "logs"}

// writeReport writes the report directory: summary.json (every figure and
// every failure), answers.jsonl and github.jsonl (every answer and every
// GitHub request), and timeline.png.
func (s *soak) writeReport(r *report) error {
	if err := os.MkdirAll(s.set.Report, 0o755); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := errors.Join(writeJSON(filepath.Join(s.set.Report, "summary.json"), true, r),
		writeJSON(filepath.Join(s.set.Report, "answers.jsonl"), false, s.answers...),
		writeJSON(filepath.Join(s.set.Report, "github.jsonl"), false, s.requests...)); err != nil {
		return err
	}
	return s.timeline(r, filepath.Join(s.set.Report, "timeline.png"))
}

func writeJSON[T any](path string, indent bool, items ...T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	for _, it := range items {
		if err = enc.Encode(it); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Flush()
	}
	return errors.Join(err, f.Close())
}

// The colours of the faults, over the rainbow in the legend's order, and of the series.
var (
	kindColors  = palette.Rainbow(len(faultKinds), palette.Red, palette.Magenta, 0.9, 0.8, 1).Colors()
	seriesColor = []color.Color{
		color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff},
		color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff},
		color.RGBA{R: 0x75, G: 0x70, B: 0xb3, A: 0xff},
		color.RGBA{R: 0xe7, G: 0x29, B: 0x8a, A: 0xff},
	}
)

// timeline draws four panels over the same time axis (seconds since the
// load began): the faults, one row per kind; the pods' answers per second;
// every GitHub request, one row per app, by outcome; each release's lag to each pod,
// at the time it was published. Faults are bands behind the last three.
func (s *soak) timeline(r *report, path string) error {
	sec := func(t time.Time) float64 { return t.Sub(s.began).Seconds() }
	end := math.Ceil(sec(s.loadEnded))
	bands := faultBars{faults: s.faults, sec: sec}
	var errs []error // of addSeries

	pf := newPanel("Faults injected (seeded schedule)", "", end, nil)
	pf.Y.Min, pf.Y.Max = -0.5, float64(len(faultKinds))-0.5
	pf.Y.Tick.Marker = rowTicks(faultKinds)
	pf.Add(faultBars{faults: s.faults, sec: sec, rows: true}, plotter.NewGrid())

	pa := newPanel("Answers per second, per API pod (bad answers in black)", "answers/s", end, bands)
	pa.Y.Min, pa.Y.Max = 0, float64(workersPerPod)*float64(time.Second/loadPace)*1.5
	perSecond := func(name string, c color.Color, keep func(podAnswer) bool) {
		pts := make(plotter.XYs, int(end)+1)
		for i := range pts {
			pts[i].X = float64(i) + 0.5
		}
		for _, a := range s.answers {
			if b := int(sec(a.End)); keep(a) && b >= 0 && b < len(pts) {
				pts[b].Y++
			}
		}
		errs = append(errs, addSeries(pa, name, pts, c, nil))
	}
	for i, pod := range s.pods {
		perSecond(pod.name, seriesColor[i], func(a podAnswer) bool { return a.Pod == pod.name })
	}
	perSecond(fmt.Sprintf("bad (%d)", r.BadAnswers), color.Black, func(a podAnswer) bool { return a.Bad != "" })

	pg := newPanel(fmt.Sprintf("GitHub requests, one row per app, one mark per request (%d in all; interval %v)", r.GitHubRequests, interval), "", end, bands)
	pg.Y.Min, pg.Y.Max = -0.7, float64(len(apps))+0.2
	keys, row := make([]string, len(apps)), map[string]float64{}
	for i, a := range apps {
		keys[i], row[a.Repo] = a.Key, float64(len(apps)-1-i)
	}
	pg.Y.Tick.Marker = rowTicks(keys)
	for i, class := range []string{"200", "304", "rate limited", "error"} { // error: 5xx, no answer, garbage
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
		errs = append(errs, addSeries(pg, fmt.Sprintf("%s (%d)", class, len(pts)), pts, seriesColor[i], draw.BoxGlyph{}))
	}

	worst := r.WorstLag.LagS[r.WorstLagPod]
	pl := newPanel(fmt.Sprintf("Lag of each release to each pod, at its publication (worst %.1fs)", worst), "lag (s)", end, bands)
	pl.X.Label.Text = "seconds since the load began"
	pl.Y.Min, pl.Y.Max = 0, math.Max(1, worst)*1.35
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}}
	for i, pod := range s.pods {
		var pts plotter.XYs
		for _, rl := range r.Releases {
			if lag, ok := rl.LagS[pod.name]; ok {
				pts = append(pts, plotter.XY{X: sec(rl.At), Y: lag})
			}
		}
		errs = append(errs, addSeries(pl, pod.name, pts, seriesColor[i], shapes[i%len(shapes)]))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	img := vgimg.NewWith(vgimg.UseWH(14*vg.Inch, 13*vg.Inch), vgimg.UseDPI(110))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	plots := [][]*plot.Plot{{pf}, {pa}, {pg}, {pl}}
	canvases := plot.Align(plots, draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(8), PadBottom: vg.Points(8),
		PadLeft: vg.Points(8), PadRight: vg.Points(8), PadY: vg.Points(14)}, dc)
	for i, p := range plots {
		p[0].X.Min, p[0].X.Max = 0, end // Add widened them to the data
		p[0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return errors.Join(err, f.Close())
}

// newPanel is a plot over [0, end] s, its time axis marked every 5, 10, 20
// or 30 s, whichever gives at most 20 marks, with the faults' bands behind
// it unless nil.
func newPanel(title, ylabel string, end float64, bands plot.Plotter) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	if bands != nil {
		p.Add(bands)
	}
	step := 30.0
	for _, st := range []float64{20, 10, 5} {
		if end/st <= 20 {
			step = st
		}
	}
	p.X.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ticks []plot.Tick
		for x := math.Ceil(lo/step) * step; x <= hi; x += step {
			ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprintf("%g", x)})
		}
		return ticks
	})
	return p
}

// rowTicks labels rows from the top, the first label highest.
func rowTicks(labels []string) plot.Ticker {
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(len(labels) - 1 - i), Label: l}
	}
	return plot.ConstantTicks(ticks)
}

// addSeries adds pts named name to p: marks of shape, or a line for none.
func addSeries(p *plot.Plot, name string, pts plotter.XYs, c color.Color, shape draw.GlyphDrawer) error {
	if len(pts) == 0 {
		return nil
	}
	var thing plot.Thumbnailer
	if shape == nil {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color, l.Width, thing = c, vg.Points(1.3), l
		p.Add(l)
	} else {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle, thing = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: shape}, sc
		p.Add(sc)
	}
	p.Legend.Add(name, thing)
	return nil
}

// faultBars draws each fault as a bar in its kind's row, or, without rows,
// as a pale band over the whole height of a panel.
type faultBars struct {
	faults []fault
	sec    func(time.Time) float64
	rows   bool
}

func (b faultBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, f := range b.faults {
		i := slices.Index(faultKinds, f.Kind)
		l, r := trX(b.sec(f.Start)), trX(b.sec(f.End))
		r = max(r, l+3)
		col, lo, hi := kindColors[i], c.Min.Y, c.Max.Y
		if row := float64(len(faultKinds) - 1 - i); b.rows {
			lo, hi = trY(row-0.35), trY(row+0.35)
		} else {
			k := col.(color.NRGBA)
			k.A = 0x40
			col = k
		}
		c.FillPolygon(col, c.ClipPolygonX([]vg.Point{{X: l, Y: lo}, {X: r, Y: lo}, {X: r, Y: hi}, {X: l, Y: hi}}))
	}
}
