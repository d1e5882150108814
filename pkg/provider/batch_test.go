package provider

import (
	"fmt"
	"strings"
	"testing"
)

func aSet(name string, n int) *RecordSet {
	rs := &RecordSet{Name: name, Type: "A", TTL: 60}
	for i := range n {
		rs.Targets = append(rs.Targets, fmt.Sprintf("192.0.2.%d", i+1))
	}
	return rs
}

func create(name string, n int) Change { return Change{Action: ActionCreate, After: aSet(name, n)} }
func del(name string, n int) Change    { return Change{Action: ActionDelete, Before: aSet(name, n)} }
func update(name string, before, after int) Change {
	return Change{Action: ActionUpdate, Before: aSet(name, before), After: aSet(name, after)}
}

// names returns the batches as slices of change names, for comparison.
func names(batches [][]Change) [][]string {
	var out [][]string
	for _, b := range batches {
		var s []string
		for _, c := range b {
			s = append(s, c.Key().Name)
		}
		out = append(out, s)
	}
	return out
}

func TestSplitBatches_RespectsLimitsKeepsOrderNeverSplitsAChange(t *testing.T) {
	route53 := Capabilities{BatchWrites: true, MaxChangesPerBatch: 1000, MaxValueBytesPerBatch: 32000}
	for _, tc := range []struct {
		name    string
		changes []Change
		caps    Capabilities
		want    [][]string
	}{
		{"empty", nil, route53, nil},
		{"unlimited is one batch", []Change{create("a", 5), del("b", 3), update("c", 1, 2)},
			Capabilities{BatchWrites: true}, [][]string{{"a", "b", "c"}}},
		{"no batch writes: one change per request", []Change{create("a", 1), create("b", 1)},
			Capabilities{BatchWrites: false, MaxChangesPerBatch: 100}, [][]string{{"a"}, {"b"}}},
		{"element limit counts records, not sets", []Change{create("a", 2), create("b", 2), create("c", 1)},
			Capabilities{BatchWrites: true, MaxChangesPerBatch: 4}, [][]string{{"a", "b"}, {"c"}}},
		{"exactly at the limit stays together", []Change{create("a", 2), create("b", 2)},
			Capabilities{BatchWrites: true, MaxChangesPerBatch: 4}, [][]string{{"a", "b"}}},
		{"update counts delete plus create", []Change{update("a", 2, 2), create("b", 1)},
			Capabilities{BatchWrites: true, MaxChangesPerBatch: 4}, [][]string{{"a"}, {"b"}}},
		{"a shrinking update counts its old records too", []Change{update("a", 5, 1), create("b", 2)},
			Capabilities{BatchWrites: true, MaxChangesPerBatch: 6}, [][]string{{"a"}, {"b"}}},
		{"oversized change gets its own batch, unsplit", []Change{create("a", 1), create("big", 10), create("c", 1)},
			Capabilities{BatchWrites: true, MaxChangesPerBatch: 4}, [][]string{{"a"}, {"big"}, {"c"}}},
		{"empty target set counts one element", []Change{create("a", 0), create("b", 0), create("c", 0)},
			Capabilities{BatchWrites: true, MaxChangesPerBatch: 2}, [][]string{{"a", "b"}, {"c"}}},
		// "192.0.2.1" is 9 bytes: a(2 targets)=18, b(1)=9, c(2)=18.
		{"value byte limit", []Change{create("a", 2), create("b", 1), create("c", 2)},
			Capabilities{BatchWrites: true, MaxValueBytesPerBatch: 27}, [][]string{{"a", "b"}, {"c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(SplitBatches(tc.changes, tc.caps, nil))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("SplitBatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSplitBatches_Route53ThousandCreatesFitOneRequestButNotThousandAndOne(t *testing.T) {
	route53 := Capabilities{BatchWrites: true, MaxChangesPerBatch: 1000, MaxValueBytesPerBatch: 32000}
	var changes []Change
	for i := range 1001 {
		changes = append(changes, Change{Action: ActionCreate, After: &RecordSet{Name: fmt.Sprintf("h%d", i), Type: "A", TTL: 60, Targets: []string{"10.0.0.1"}}})
	}
	got := SplitBatches(changes[:1000], route53, nil)
	if len(got) != 1 || len(got[0]) != 1000 {
		t.Fatalf("1000 single-record creates: %d batches, want 1", len(got))
	}
	got = SplitBatches(changes, route53, nil)
	if len(got) != 2 || len(got[0]) != 1000 || len(got[1]) != 1 {
		t.Fatalf("1001 creates: batch sizes %d, want [1000 1]", len(got))
	}
	// Order is kept across batches.
	i := 0
	for _, b := range got {
		for _, c := range b {
			if c.Key().Name != fmt.Sprintf("h%d", i) {
				t.Fatalf("change %d is %s", i, c.Key().Name)
			}
			i++
		}
	}
}

func TestSplitBatches_Route53ValueCharactersSplitLargeTXT(t *testing.T) {
	route53 := Capabilities{BatchWrites: true, MaxChangesPerBatch: 1000, MaxValueBytesPerBatch: 32000}
	value := strings.Repeat("v", 1000) // 4 chunks: 1000 + 4*2 quotes + 3 spaces = 1011
	var changes []Change
	for i := range 40 {
		changes = append(changes, Change{Action: ActionCreate, After: &RecordSet{Name: fmt.Sprintf("t%d", i), Type: "TXT", TTL: 60, Targets: []string{value}}})
	}
	batches := SplitBatches(changes, route53, nil)
	// 32000 / 1011 = 31 per batch.
	if len(batches) != 2 || len(batches[0]) != 31 || len(batches[1]) != 9 {
		t.Fatalf("batch sizes: %d batches, first %d", len(batches), len(batches[0]))
	}
}

func TestValueBytes_CountsTXTQuotedAndEscaped(t *testing.T) {
	for _, tc := range []struct {
		rtype, value string
		want         int
	}{
		{"A", "192.0.2.1", 9},
		{"TXT", "abc", 5},
		{"TXT", `a"b`, 6},
		{"TXT", `a\b`, 6},
		{"TXT", "", 2},
		{"TXT", strings.Repeat("x", 256), 256 + 4 + 1},
		{"TXT", "a\tb", 2 + 1 + 4 + 1}, // \011 or \009
		{"txt", `"`, 4},
		{"CNAME", "www.example.test", 17},
		{"CNAME", "WWW.Example.Test.", 17},
		{"MX", "10 mail.example.test", 21},
		{"SRV", "0 5 5060 sip.example.test", 26},
		{"AAAA", "2001:0db8:0000::0001", 11},
		{"CAA", "0 issue letsencrypt.org", 25},
	} {
		if got := ValueBytes(tc.rtype, tc.value); got != tc.want {
			t.Errorf("ValueBytes(%s, %q) = %d, want %d", tc.rtype, tc.value, got, tc.want)
		}
	}
}

// sized is a Provider (nil embedded: only its RequestCost is called) that counts every change as
// one element and no value characters.
type sized struct{ Provider }

func (sized) RequestCost(Change) (int, int) { return 1, 0 }

func TestSplitBatches_CostFunctionReplacesChangeCost(t *testing.T) {
	caps := Capabilities{BatchWrites: true, MaxChangesPerBatch: 2, MaxValueBytesPerBatch: 9}
	changes := []Change{create("a", 3), create("b", 3), update("c", 3, 3)}
	for _, tc := range []struct {
		name string
		cost func(Change) (int, int)
		want [][]string
	}{
		// ChangeCost: a and b cost 3 elements each, c 6: every change over the limit alone.
		{"nil is ChangeCost", nil, [][]string{{"a"}, {"b"}, {"c"}}},
		{"ChangeCost", ChangeCost, [][]string{{"a"}, {"b"}, {"c"}}},
		{"a provider's RequestSizer", func(ch Change) (int, int) { return RequestCost(sized{}, ch) }, [][]string{{"a", "b"}, {"c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(SplitBatches(changes, caps, tc.cost)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("SplitBatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequestCost_AsksTheSizerElseChangeCost(t *testing.T) {
	ch := update("a", 5, 1) // "192.0.2.N" is 9 characters
	for _, tc := range []struct {
		name         string
		p            Provider
		elems, bytes int
	}{
		{"no sizer: Before plus After", nil, 6, 54},
		{"sizer", sized{}, 1, 0},
	} {
		if e, b := RequestCost(tc.p, ch); e != tc.elems || b != tc.bytes {
			t.Errorf("%s: RequestCost = %d, %d; want %d, %d", tc.name, e, b, tc.elems, tc.bytes)
		}
	}
	if e, b := SetCost(nil); e != 0 || b != 0 {
		t.Errorf("SetCost(nil) = %d, %d", e, b)
	}
	if e, _ := SetCost(aSet("empty", 0)); e != 1 {
		t.Errorf("an empty set costs %d elements, want 1", e)
	}
}

// TestSplitBatches_DeletionsByTheirOwnCost: a zone's deletions (ZoneDrainer) are split by the
// same function, each counted by its declared Elements and ValueBytes (nil = ItemCost).
func TestSplitBatches_DeletionsByTheirOwnCost(t *testing.T) {
	caps := Capabilities{BatchWrites: true, MaxChangesPerBatch: 4, MaxValueBytesPerBatch: 10}
	del := func(name string, e, b int) Deletion {
		return Deletion{Key: RecordSetKey{Name: name, Type: "A"}, Elements: e, ValueBytes: b}
	}
	dels := []Deletion{del("a", 2, 3), del("b", 2, 3), del("c", 1, 5), del("d", 1, 1), del("e", 9, 0)}
	for _, cost := range []func(Deletion) (int, int){nil, DeletionCost} {
		var got [][]string
		for _, b := range SplitBatches(dels, caps, cost) {
			var n []string
			for _, d := range b {
				n = append(n, d.Key.Name)
			}
			got = append(got, n)
		}
		if want := "[[a b] [c d] [e]]"; fmt.Sprint(got) != want {
			t.Errorf("SplitBatches(deletions) = %v, want %s", got, want)
		}
	}
}
