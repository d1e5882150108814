package dnsserver

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// TestAnswerCache_ServesEachAnswerFromItsAddOnAndPromotesWithoutALock adds
// answers one by one and checks, after each add, that every answer added so
// far is served (from the published map or from pending); then that asking
// them again promotes all of them, within len(read)/promoteEvery+1 rounds (a
// round of lookups hits pending at least once while it holds anything), so
// that the steady state takes no lock (pending empty).
func TestAnswerCache_ServesEachAnswerFromItsAddOnAndPromotesWithoutALock(t *testing.T) {
	for _, n := range []int{1, 2, 9, 100, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := newAnswerCache(nil, nil)
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("k%d", i))
				c.add(keys[i], []byte{byte(i), byte(i >> 8)}, 0, i%16, 0, 1<<30, 0)
				for j, k := range keys[:i+1] {
					if e := c.get(k, 0); e == nil || e.rcode != j%16 || e.wire[0] != byte(j) || e.wire[1] != byte(j>>8) {
						t.Fatalf("after %d adds, key %s: %+v", i+1, k, e)
					}
				}
			}
			for range n/promoteEvery + 1 {
				for _, k := range keys {
					c.get(k, 0)
				}
			}
			if p := c.pendingN.Load(); p != 0 || len(c.read.Load().m) != n {
				t.Fatalf("after asking again: %d pending, %d published; want 0, %d", p, len(c.read.Load().m), n)
			}
		})
	}
}

// TestAnswerCache_AddKeepsTheFirstAnswerAndTheLimit checks that a key added
// twice keeps its first answer, pending or published, and that an add that
// would pass the byte limit is dropped.
func TestAnswerCache_AddKeepsTheFirstAnswerAndTheLimit(t *testing.T) {
	c := newAnswerCache(nil, nil)
	cost := len("a") + 1 + answerEntryOverhead
	limit := 3 * cost
	c.add([]byte("a"), []byte{1}, 0, 0, 0, limit, 0)
	c.add([]byte("a"), []byte{2}, 0, 0, 0, limit, 0)
	c.add([]byte("b"), []byte{3}, 0, 0, 0, limit, 0)
	c.add([]byte("b"), []byte{4}, 0, 0, 0, limit, 0)
	c.add([]byte("c"), []byte{5}, 0, 0, 0, limit, 0)
	c.add([]byte("d"), []byte{6}, 0, 0, 0, limit, 0) // full
	for _, want := range []struct {
		key  string
		wire byte // 0: not cached
	}{{"a", 1}, {"b", 3}, {"c", 5}, {"d", 0}} {
		e := c.get([]byte(want.key), 0)
		switch {
		case want.wire == 0 && e != nil:
			t.Fatalf("%s cached past the limit", want.key)
		case want.wire != 0 && (e == nil || e.wire[0] != want.wire):
			t.Fatalf("%s: %+v, want wire %d", want.key, e, want.wire)
		}
	}
	if c.bytes != limit {
		t.Fatalf("bytes %d, want %d", c.bytes, limit)
	}
}

// TestAnswerCache_ConcurrentAddsAndLookupsSeeOnlyTheirOwnAnswers runs
// lookups beside adds of the same keys (run it with -race): a lookup finds
// nothing or the one answer of its key, never another key's.
func TestAnswerCache_ConcurrentAddsAndLookupsSeeOnlyTheirOwnAnswers(t *testing.T) {
	const keys, workers = 2000, 4
	c := newAnswerCache(nil, nil)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 3 {
				for i := range keys {
					k := (i*7919 + w*104729 + round) % keys
					key := []byte(fmt.Sprintf("k%d", k))
					if e := c.get(key, 0); e != nil && int(e.wire[0])|int(e.wire[1])<<8 != k {
						errs <- fmt.Errorf("key %d got the answer of %d", k, int(e.wire[0])|int(e.wire[1])<<8)
						return
					}
					c.add(key, []byte{byte(k), byte(k >> 8)}, 0, 0, 0, 1<<30, 0)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range keys {
		if e := c.get([]byte(fmt.Sprintf("k%d", i)), 0); e == nil {
			t.Fatalf("k%d lost", i)
		}
	}
}

// captureWriter is a dns.ResponseWriter that keeps the last response's bytes.
type captureWriter struct {
	discardWriter
	last []byte
}

func (w *captureWriter) Write(b []byte) (int, error) {
	w.last = append(w.last[:0], b...)
	return len(b), nil
}
func (w *captureWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	w.last = b
	return nil
}

// TestAnswerCache_NeverServesAnOlderSerialAfterAnUpdateReturns updates one
// record over and over while other goroutines ask for it as fast as they can
// (filling and hitting the caches of every snapshot, through ServeDNS and
// the UDP read loop's appendHit): once an Update has returned, every answer
// begun after it carries its value or a later one, never an older one.
func TestAnswerCache_NeverServesAnOlderSerialAfterAnUpdateReturns(t *testing.T) {
	store := exampleStore(t, "")
	srv, err := NewServer(store, ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	set := func(i int) {
		t.Helper()
		err := store.Update("example.test.", func(tx *zonedb.Tx) error {
			put(t, tx, "", nil, fmt.Sprintf("c.example.test. 60 IN A 10.9.%d.%d", i/256, i%256))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	q := new(dns.Msg)
	q.SetQuestion("c.example.test.", dns.TypeA)
	wire, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	// value returns the i of the answer's A record 10.9.i/256.i%256.
	value := func(b []byte) (int, error) {
		m := new(dns.Msg)
		if err := m.Unpack(b); err != nil || len(m.Answer) != 1 {
			return 0, fmt.Errorf("answer %v: %w", m, err)
		}
		ip := m.Answer[0].(*dns.A).A.To4()
		return int(ip[2])<<8 | int(ip[3]), nil
	}
	set(0)
	var (
		mu    sync.Mutex
		acked int // the last Update that returned
		stop  = make(chan struct{})
		wg    sync.WaitGroup
		errs  = make(chan error, 4)
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cw := &captureWriter{discardWriter: discardWriter{remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000 + w}}}
			r := srv.newFastReader(nil).(*fastReader)
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				floor := acked
				mu.Unlock()
				var b []byte
				if _, ok := r.reply(wire, netip.Addr{}); ok && w%2 == 0 {
					b = r.out
				} else {
					req := new(dns.Msg)
					if err := req.Unpack(wire); err != nil {
						errs <- err
						return
					}
					srv.ServeDNS(cw, req)
					b = cw.last
				}
				got, err := value(b)
				if err == nil && got < floor {
					err = fmt.Errorf("answered %d after update %d returned", got, floor)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 1; i <= 300; i++ {
		set(i)
		mu.Lock()
		acked = i
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if srv.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
}
