package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
)

// bed is one run's test bed: the members' managers, the targets, the network's state and the
// logs of changes and answers.
type bed struct {
	w       World
	root    string
	nodes   []*node
	targets [][2]*target

	mu       sync.Mutex
	state    State
	cutCount [][]int
	readyAt  []time.Time // each member's last /readyz after a start
	changes  []Change
	answers  []Answer
	chLog    *json.Encoder
	ansLog   *json.Encoder
	files    []*os.File
	wg       sync.WaitGroup // manager starts in the background
}

// setup makes the users, directories, addresses and targets and starts n members.
func setup(ctx context.Context, o options) (*bed, error) {
	b := &bed{root: o.root, w: World{Seed: o.seed, Primary: 0, Grace: o.grace(), FlapWindow: o.flap[0], FlapDwell: o.flap[1]}}
	if err := os.RemoveAll(o.root); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.root, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(o.root, 0o755); err != nil {
		return nil, err
	}
	var hosts, thosts []string
	for m := range o.members {
		hosts = append(hosts, "127.0.0.1"+strconv.Itoa(m+1))
		thosts = append(thosts, "127.0.0.2"+strconv.Itoa(m+1), v6Target(m))
		if err := addAddr(v6Target(m)); err != nil {
			return b, err
		}
	}
	dnsPort, err1 := ports.Shared(hosts...)
	tPort, err2 := ports.Shared(thosts...)
	if err := errors.Join(err1, err2); err != nil {
		return b, err
	}
	for m := range o.members {
		name := "g" + strconv.Itoa(m+1)
		mem := Member{Name: name, DNS: net.JoinHostPort(hosts[m], strconv.Itoa(dnsPort)),
			Addr: [2]string{thosts[2*m], thosts[2*m+1]}}
		b.w.Members = append(b.w.Members, mem)
		b.targets = append(b.targets, [2]*target{{addr: net.JoinHostPort(mem.Addr[V4], strconv.Itoa(tPort))},
			{addr: net.JoinHostPort(mem.Addr[V6], strconv.Itoa(tPort))}})
		for _, t := range b.targets[m] {
			if err := t.up(); err != nil {
				return b, err
			}
		}
	}
	if err := b.makeNodes(o); err != nil {
		return b, err
	}
	if err := b.openLogs(); err != nil {
		return b, err
	}
	return b, b.startAll(ctx, o, tPort)
}

// makeNodes makes each member's user and directory.
func (b *bed) makeNodes(o options) error {
	for m, mem := range b.w.Members {
		uid, gid, err := ensureUser(userName(m))
		if err != nil {
			return err
		}
		dir := filepath.Join(b.root, mem.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			return err
		}
		var peers []string
		for p, pm := range b.w.Members {
			if p != m {
				peers = append(peers, pm.Name+"="+pm.DNS)
			}
		}
		b.nodes = append(b.nodes, &node{idx: m, name: mem.Name, user: userName(m), uid: uid, gid: gid, dir: dir,
			dnsAddr: mem.DNS, peers: strings.Join(peers, ","), repo: o.repo, manager: o.manager, timing: o.timing,
			logPath: filepath.Join(b.root, "manager-"+mem.Name+".log")})
	}
	b.state = NewState(len(b.nodes))
	b.readyAt = make([]time.Time, len(b.nodes))
	b.cutCount = make([][]int, len(b.nodes))
	for m := range b.nodes {
		b.cutCount[m] = make([]int, len(b.nodes))
	}
	return nil
}

// openLogs writes world.json and opens changes.jsonl and answers.jsonl.
func (b *bed) openLogs() error {
	wj, err := json.MarshalIndent(b.w, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.root, "world.json"), wj, 0o644); err != nil {
		return err
	}
	for _, name := range []string{"changes.jsonl", "answers.jsonl"} {
		f, err := os.Create(filepath.Join(b.root, name))
		if err != nil {
			return err
		}
		b.files = append(b.files, f)
	}
	b.chLog, b.ansLog = json.NewEncoder(b.files[0]), json.NewEncoder(b.files[1])
	return nil
}

// startAll starts every manager side by side, applies each member's objects, and waits until
// every member answers the primary's targets.
func (b *bed) startAll(ctx context.Context, o options, tPort int) error {
	errs := make([]error, len(b.nodes))
	var wg sync.WaitGroup
	for i, n := range b.nodes {
		wg.Go(func() {
			if errs[i] = n.run(ctx, 0); errs[i] == nil {
				proto := dnsv1.HealthCheckHTTP
				if i%2 == 1 {
					proto = dnsv1.HealthCheckTCP
				}
				errs[i] = applyObjects(ctx, n, b.w, proto, tPort)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Printf("chaos: %d managers ready; waiting until every member answers the primary's targets\n", len(b.nodes))
	return retry(ctx, 5*time.Minute, func(ctx context.Context) error {
		for m := range b.w.Members {
			for f, qt := range qtypes {
				a := b.ask(ctx, 0, m, qt)
				if want := b.w.Members[b.w.Primary].Addr[f]; a.Err != "" || !sameSet(a.Values, []string{want}) {
					return fmt.Errorf("%s answers %s %v %s%s, want %s", b.w.Members[m].Name, qt, a.Values, a.Rcode, a.Err, want)
				}
			}
		}
		return nil
	})
}

// ask queries member m's DNS server for the host's qtype records.
func (b *bed) ask(ctx context.Context, round, m int, qt string) Answer {
	a := Answer{At: time.Now(), Round: round, Member: m, Type: qt}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(gslbHost), dns.StringToType[qt])
	ctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancel()
	r, _, err := (&dns.Client{Timeout: 800 * time.Millisecond}).ExchangeContext(ctx, q, b.w.Members[m].DNS)
	if err != nil {
		a.Err = err.Error()
		return a
	}
	a.Rcode = dns.RcodeToString[r.Rcode]
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *dns.A:
			a.Values = append(a.Values, v.A.String())
		case *dns.AAAA:
			a.Values = append(a.Values, v.AAAA.String())
		}
	}
	return a
}
