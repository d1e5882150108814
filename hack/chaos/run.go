package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// record appends the current state as a change named what, in memory and in changes.jsonl.
// The caller holds b.mu.
func (b *bed) record(what string) {
	ch := Change{At: time.Now(), What: what, State: b.state.Clone()}
	b.changes = append(b.changes, ch)
	if err := b.chLog.Encode(ch); err != nil {
		fmt.Printf("chaos: changes.jsonl: %v\n", err)
	}
	fmt.Printf("chaos: %s %s\n", clock(ch.At), what)
}

// apply runs one step's ops and records the state they make; a manager start goes on in the
// background and records its own change ("ready ...") once the manager answers /readyz.
func (b *bed) apply(ctx context.Context, st Step) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range st.Ops {
		if err := b.op(ctx, st, op); err != nil {
			return err
		}
	}
	b.record(st.What)
	return nil
}

// op runs one op; the caller holds b.mu.
func (b *bed) op(ctx context.Context, st Step, op Op) error {
	switch op.Kind {
	case OpCut, OpUncut:
		return b.cut(op.A, op.B, op.Kind == OpCut)
	case OpKill:
		b.state.Running[op.A] = false
		return b.nodes[op.A].kill()
	case OpStart:
		b.state.Skew[op.A] = op.Skew
		b.wg.Go(func() {
			err := b.nodes[op.A].run(ctx, op.Skew)
			b.mu.Lock()
			defer b.mu.Unlock()
			if err != nil {
				b.record(fmt.Sprintf("start of %s failed (%s): %v", b.w.Members[op.A].Name, st.What, err))
				return
			}
			b.state.Running[op.A] = true
			b.readyAt[op.A] = time.Now()
			b.record(fmt.Sprintf("ready %s (%s)", b.w.Members[op.A].Name, st.What))
		})
	case OpTargetDown:
		b.state.Down[op.A][op.Fam] = true
		b.targets[op.A][op.Fam].down()
	case OpTargetUp:
		b.state.Down[op.A][op.Fam] = false
		return b.targets[op.A][op.Fam].up()
	}
	return nil
}

// cut counts one more (or one less) fault cutting a from b and adds (removes) the rules when
// the count leaves (reaches) zero: a's user to b's DNS server and to b's two targets.
func (b *bed) cut(a, c int, on bool) error {
	before := b.cutCount[a][c] > 0
	if on {
		b.cutCount[a][c]++
	} else if b.cutCount[a][c] > 0 {
		b.cutCount[a][c]--
	}
	after := b.cutCount[a][c] > 0
	if before == after {
		return nil
	}
	b.state.Cut[a][c] = after
	op := "-D"
	if after {
		op = "-I"
	}
	host, _, err := net.SplitHostPort(b.w.Members[c].DNS)
	if err != nil {
		return err
	}
	for _, dst := range []string{host, b.w.Members[c].Addr[V4], b.w.Members[c].Addr[V6]} {
		if err := iptables(op, rule(userName(a), dst)); err != nil {
			return err
		}
	}
	return nil
}

// execute runs the schedule from start, then waits for the background starts.
func (b *bed) execute(ctx context.Context, steps []Step, start time.Time) error {
	for _, st := range steps {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(st.At))):
		}
		if err := b.await(ctx, st); err != nil {
			return err
		}
		if err := b.apply(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st.What, err)
		}
	}
	b.wg.Wait()
	return nil
}

// await holds st until its Await member has been ready for its Settle time.
func (b *bed) await(ctx context.Context, st Step) error {
	if st.Await == 0 {
		return nil
	}
	for {
		b.mu.Lock()
		m := st.Await - 1
		wait := time.Second
		if b.state.Running[m] {
			wait = time.Until(b.readyAt[m].Add(st.Settle))
		}
		b.mu.Unlock()
		if wait <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(wait, time.Second)):
		}
	}
}

// queryLoop asks every member for A and AAAA every interval, in rounds, until ctx ends, and
// logs every answer.
func (b *bed) queryLoop(ctx context.Context, interval time.Duration) {
	for round := 1; ctx.Err() == nil; round++ {
		next := time.Now().Add(interval)
		var wg sync.WaitGroup
		for m := range b.w.Members {
			for _, qt := range qtypes {
				wg.Go(func() {
					a := b.ask(context.Background(), round, m, qt)
					b.mu.Lock()
					defer b.mu.Unlock()
					b.answers = append(b.answers, a)
					_ = b.ansLog.Encode(a)
				})
			}
		}
		wg.Wait()
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
}

// teardown stops every manager, closes the targets and the logs, and removes the rules, the
// addresses, the users' processes and the users, and the members' control-plane data (the
// logs stay in the run's directory).
func (b *bed) teardown() {
	if b == nil {
		return
	}
	var wg sync.WaitGroup
	for _, n := range b.nodes {
		wg.Go(n.stop)
	}
	wg.Wait()
	for _, ts := range b.targets {
		for _, t := range ts {
			t.down()
		}
	}
	for _, f := range b.files {
		_ = f.Close()
	}
	if done := cleanupHost(true); done != "" {
		fmt.Printf("chaos: cleanup removed %s\n", done)
	}
	for _, mem := range b.w.Members {
		_ = os.RemoveAll(filepath.Join(b.root, mem.Name, "local"))
	}
}
