package app

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// gslbFlags are the Gslb membership flags beyond --ext-gslb-clusters (docs/api.md, "The
// manager"): the witnesses, witness mode, and the hidden test clock offset.
type gslbFlags struct {
	// witnesses is --ext-gslb-witnesses, geotag=host:port,...
	witnesses string
	// witness is --gslb-witness: run the Gslb controller as a witness.
	witness bool
	// clockOffset is --gslb-clock-offset (hidden, for the nemesis): shifts the Gslb health
	// clock.
	clockOffset time.Duration
}

// hiddenFlags are flags left out of --help: test hooks.
var hiddenFlags = map[string]bool{"gslb-clock-offset": true}

// bind binds the Gslb membership flags to fs, and makes fs's usage leave out hiddenFlags.
func (f *gslbFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.witnesses, "ext-gslb-witnesses", "", "Gslb witnesses (managers run with --gslb-witness): comma-separated geotag=host:port of their DNS servers. Each is a member of every Gslb's membership: it votes on targets and owns none.")
	fs.BoolVar(&f.witness, "gslb-witness", false, "Run the Gslb controller as a witness: no targets of its own, no edge NS record, no <host> answers; it probes the targets of --ext-gslb-clusters and publishes its verdict records on its embedded DNS server.")
	fs.DurationVar(&f.clockOffset, "gslb-clock-offset", 0, "Test hook: shift the Gslb health clock by this duration.")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
		visible := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		visible.SetOutput(out)
		fs.VisitAll(func(fl *flag.Flag) {
			if !hiddenFlags[fl.Name] {
				visible.Var(fl.Value, fl.Name, fl.Usage)
			}
		})
		visible.PrintDefaults()
	}
}

// validate checks --geo-tag (lower case: gslb.CheckGeoTagCase) and the Gslb membership flags
// against --geo-tag and --ext-gslb-clusters.
func (f gslbFlags) validate(geoTag, clusters string) error {
	var errs []error
	if err := gslb.CheckGeoTagCase(geoTag); err != nil {
		errs = append(errs, fmt.Errorf("--geo-tag: %w", err))
	}
	ws, err := gslb.ParsePeers(f.witnesses)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("--ext-gslb-witnesses: %w", err))...)
	}
	peers, _ := gslb.ParsePeers(clusters)
	for _, w := range ws {
		for _, p := range peers {
			if p.GeoTag == w.GeoTag {
				errs = append(errs, fmt.Errorf("--ext-gslb-witnesses: geo tag %q is also in --ext-gslb-clusters", w.GeoTag))
			}
		}
		if w.GeoTag == geoTag {
			errs = append(errs, fmt.Errorf("--ext-gslb-witnesses: geo tag %q is this manager's --geo-tag", w.GeoTag))
		}
	}
	if f.witness && (geoTag == "" || len(peers) == 0) {
		errs = append(errs, errors.New("--gslb-witness needs --geo-tag and --ext-gslb-clusters (the members whose targets it judges)"))
	}
	return errors.Join(errs...)
}

// clock returns the Gslb health clock: the real one shifted by --gslb-clock-offset, nil
// without an offset (the default real clock).
func (f gslbFlags) clock() clock.Clock {
	if f.clockOffset == 0 {
		return nil
	}
	return OffsetClock{Offset: f.clockOffset}
}

// OffsetClock is the real clock with Now (and Since) shifted by Offset: a cluster whose clock
// is wrong, for tests. Timers and tickers run in real time.
type OffsetClock struct {
	clock.RealClock
	Offset time.Duration
}

// Now is the real time plus Offset.
func (c OffsetClock) Now() time.Time { return time.Now().Add(c.Offset) }

// Since is c.Now() minus t.
func (c OffsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
