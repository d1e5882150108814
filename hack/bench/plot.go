package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotReport draws bench.png: the first sync's time (left) and provider calls (right) against
// the size, one line per tool and scenario, medians of the successful runs, log-log axes.
func plotReport(runs []runResult, path string) error {
	timeP := newLogPlot("first sync", "endpoints", "seconds")
	callsP := newLogPlot("provider calls in the first sync", "endpoints", "calls")
	var timeLines, callLines []any
	for _, sc := range allScenarios {
		for _, tool := range []string{toolExternalDNS, toolDNSPlane} {
			t, c := series(runs, tool, sc.Name)
			if len(t) == 0 {
				continue
			}
			label := tool + " " + sc.Name
			timeLines, callLines = append(timeLines, label, t), append(callLines, label, c)
		}
	}
	if len(timeLines) == 0 {
		return nil // nothing succeeded yet
	}
	if err := errors.Join(plotutil.AddLinePoints(timeP, timeLines...), plotutil.AddLinePoints(callsP, callLines...)); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	for _, p := range []*plot.Plot{timeP, callsP} {
		// Some room around the points, so a single size or a flat line still shows its ticks.
		p.X.Min, p.X.Max = p.X.Min/1.5, p.X.Max*1.5
		p.Y.Min, p.Y.Max = p.Y.Min/1.5, p.Y.Max*1.5
	}
	img := vgimg.New(32*vg.Centimeter, 13*vg.Centimeter)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align([][]*plot.Plot{{timeP, callsP}}, tiles, dc)
	timeP.Draw(canvases[0][0])
	callsP.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func newLogPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.TickerFunc(logTicks), plot.TickerFunc(logTicks)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p
}

// series returns, for tool and scenario, the median first-sync time and calls per size, sizes
// ascending; sizes with no successful run, and non-positive values (log axes), are left out.
func series(runs []runResult, tool, scenario string) (times, calls plotter.XYs) {
	bySize := map[int][][2]float64{}
	for _, r := range runs {
		if r.Tool == tool && r.Scenario == scenario && r.Error == "" {
			bySize[r.Size] = append(bySize[r.Size], [2]float64{r.FirstSyncSeconds, float64(r.ProviderCalls.Total)})
		}
	}
	sizes := make([]int, 0, len(bySize))
	for s := range bySize {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	for _, s := range sizes {
		var t, c []float64
		for _, v := range bySize[s] {
			t, c = append(t, v[0]), append(c, v[1])
		}
		if mt := median(t); mt > 0 {
			times = append(times, plotter.XY{X: float64(s), Y: mt})
		}
		if mc := median(c); mc > 0 {
			calls = append(calls, plotter.XY{X: float64(s), Y: mc})
		}
	}
	return times, calls
}

// logTicks labels 1, 2 and 5 times each power of ten within [lo, hi] (log axes).
func logTicks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: formatNum(v)})
			}
		}
	}
	return ticks
}
