package geo

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/oschwald/maxminddb-golang/v2"
)

// DefaultReloadInterval is how often DB.Run checks the file for a change.
const DefaultReloadInterval = 10 * time.Second

// DB is a MaxMind-format GeoIP database (GeoLite2/GeoIP2 Country or City, DB-IP's) read whole
// into memory from Path and reloaded by Run when the file changes. Its Locate is safe for
// concurrent use and takes no lock: it reads the current database through an atomic pointer.
// A zero DB (or one whose file never loaded) locates nothing.
type DB struct {
	// Path is the mmdb file (--geoip-database); symlinks are followed, as a mounted Secret or
	// ConfigMap swaps them.
	Path string
	// Interval between two checks of the file; default DefaultReloadInterval.
	Interval time.Duration
	// Logger reports loads and failed reloads.
	Logger logr.Logger
	// OnLoad, when set, is called after every successful load with the new generation (the
	// server drops answers made from the old database).
	OnLoad func(generation uint64)

	cur  atomic.Pointer[loaded]
	gen  atomic.Uint64
	fail atomic.Uint64
}

// loaded is one version of the database and its decoded records by data offset.
type loaded struct {
	r     *maxminddb.Reader
	info  os.FileInfo
	cache sync.Map     // uintptr (record offset) -> Location
	n     atomic.Int64 // entries in cache, at most maxCached
}

// maxCached bounds the decoded records kept per database version: a Country database has a
// few hundred records, a City one hundreds of thousands, of which the first 65,536 seen are
// kept.
const maxCached = 1 << 16

// record is the part of a GeoIP2 Country/City (and DB-IP) record the match reads.
type record struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	RegisteredCountry struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
	Continent struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"continent"`
}

// Load reads Path now and makes it the current database. An error (missing file, not an
// mmdb) leaves the current one in place.
func (d *DB) Load() error {
	info, err := os.Stat(d.Path)
	var buf []byte
	if err == nil {
		buf, err = os.ReadFile(d.Path)
	}
	if err != nil {
		return fmt.Errorf("geoip database: %w", err)
	}
	r, err := maxminddb.OpenBytes(buf)
	if err != nil {
		return fmt.Errorf("geoip database %s: %w", d.Path, err)
	}
	d.cur.Store(&loaded{r: r, info: info})
	g := d.gen.Add(1)
	d.Logger.Info("loaded the geoip database", "path", d.Path, "type", r.Metadata.DatabaseType,
		"built", r.Metadata.BuildTime().UTC().Format(time.RFC3339), "generation", g)
	if d.OnLoad != nil {
		d.OnLoad(g)
	}
	return nil
}

// Generation counts the successful loads: 0 before the first.
func (d *DB) Generation() uint64 { return d.gen.Load() }

// Failures counts the reloads that failed since the start.
func (d *DB) Failures() uint64 { return d.fail.Load() }

// Run checks the file every Interval until ctx ends and reloads it when its size, modification
// time or identity (device and inode, os.SameFile) changed, or when nothing loaded yet. A
// failed reload keeps the last good database and is logged; it is tried again at the next
// change. It returns nil when ctx ends.
func (d *DB) Run(ctx context.Context) error {
	tick := time.NewTicker(cmpOr(d.Interval, DefaultReloadInterval))
	defer tick.Stop()
	var lastFailed os.FileInfo
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		info, err := os.Stat(d.Path)
		if err != nil {
			if lastFailed == nil {
				d.Logger.Error(err, "geoip database: cannot read the file; keeping the last one", "path", d.Path)
			}
			lastFailed = dummyInfo{}
			continue
		}
		cur := d.cur.Load()
		if (cur != nil && same(cur.info, info)) || (lastFailed != nil && same(lastFailed, info)) {
			continue
		}
		if err := d.Load(); err != nil {
			d.fail.Add(1)
			lastFailed = info
			d.Logger.Error(err, "geoip database: reload failed; keeping the last one", "path", d.Path)
			continue
		}
		lastFailed = nil
	}
}

func cmpOr(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}

// same: a and b describe the same unchanged file.
func same(a, b os.FileInfo) bool {
	if _, ok := a.(dummyInfo); ok {
		return false
	}
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && os.SameFile(a, b)
}

// dummyInfo marks a file that could not be stat'ed.
type dummyInfo struct{ os.FileInfo }

// Locate implements Locator: the country (country.iso_code, else registered_country.iso_code)
// and continent (continent.code) of addr, and the database network that holds them. No
// database, or an error reading the record, gives a zero Location; no database gives an
// invalid prefix.
func (d *DB) Locate(addr netip.Addr) (Location, netip.Prefix) {
	l := d.cur.Load()
	if l == nil {
		return Location{}, netip.Prefix{}
	}
	res := l.r.Lookup(addr)
	netw := res.Prefix()
	if !res.Found() {
		return Location{}, netw
	}
	off := res.Offset()
	if v, ok := l.cache.Load(off); ok {
		return v.(Location), netw
	}
	var rec record
	if err := res.Decode(&rec); err != nil {
		return Location{}, netw
	}
	loc := Location{Country: rec.Country.ISOCode, Continent: rec.Continent.Code}
	if loc.Country == "" {
		loc.Country = rec.RegisteredCountry.ISOCode
	}
	if l.n.Load() < maxCached {
		if _, had := l.cache.LoadOrStore(off, loc); !had {
			l.n.Add(1)
		}
	}
	return loc, netw
}
