package zonewriter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// nullProvider answers every call at once: a zone of fixed sets, writes accepted. It isolates
// the writer's own cost (queueing, the view's working copy, preconditions, answers) from any
// provider's.
type nullProvider struct {
	provider.Provider // nil: only the methods below are called
	sets              []provider.RecordSet
}

func (n nullProvider) Capabilities() provider.Capabilities {
	return provider.Capabilities{BatchWrites: true}
}

func (n nullProvider) ListRecordSets(context.Context, string) ([]provider.RecordSet, error) {
	return n.sets, nil
}

func (n nullProvider) ApplyChanges(context.Context, string, []provider.Change) error { return nil }

// BenchmarkWriter_Flush is one flush of a zone writer: subs concurrent submissions of one update
// each (Before the view's set, After a new target), against a zone of sets record sets, through
// a provider that answers at once. ns/op is the time from the first submission to the last
// answer; with subs > 1 group commit takes them in one or two flushes.
func BenchmarkWriter_Flush(b *testing.B) {
	for _, size := range []int{1_000, 10_000} {
		for _, subs := range []int{1, 100} {
			b.Run(fmt.Sprintf("sets=%d/subs=%d", size, subs), func(b *testing.B) {
				benchFlush(b, size, subs)
			})
		}
	}
}

func benchFlush(b *testing.B, size, subs int) {
	sets := make([]provider.RecordSet, size)
	for i := range sets {
		sets[i] = provider.RecordSet{Name: fmt.Sprintf("h%d.%s", i, zone), Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	w := zonewriter.New(ctx, nullProvider{sets: sets}, zone, zonewriter.Options{})
	if _, err := w.RecordSets(ctx); err != nil {
		b.Fatal(err)
	}
	cur := make([]provider.RecordSet, subs) // what the view holds for each submission's set
	copy(cur, sets[:subs])
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var wg sync.WaitGroup
		for k := range subs {
			before, next := cur[k], cur[k]
			next.Targets = []string{fmt.Sprintf("192.0.2.%d", 2+i%200)}
			ch := provider.Change{Action: provider.ActionUpdate, Before: &before, After: &next}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Apply(ctx, []provider.Change{ch}); err != nil {
					b.Error(err)
				}
			}()
			cur[k] = next
		}
		wg.Wait()
	}
}
