package provider

import "strings"

// RequestSizer is the optional interface of a Provider that knows exactly what one change costs
// in the request it sends, where ChangeCost (which knows only the presentation form) would count
// more: Route 53 sends an alias as an AliasTarget with no Value element, for example. The guard's
// splitter (pkg/provider/guard, the only caller of SplitBatches) asks it through RequestCost;
// decorators between the guard and the provider (pkg/provider/counting) forward it.
type RequestSizer interface {
	// RequestCost returns the ResourceRecord elements and value characters ch costs against
	// Capabilities' per-request limits in the request the provider sends for it. It must never be
	// below what the backend counts, is pure (no I/O) and accepts changes not yet validated.
	RequestCost(ch Change) (elements, valueBytes int)
}

// RequestCost returns what ch costs in one write request of p: p.RequestCost when p is a
// RequestSizer, else ChangeCost.
func RequestCost(p Provider, ch Change) (elements, valueBytes int) {
	if s, ok := p.(RequestSizer); ok {
		return s.RequestCost(ch)
	}
	return ChangeCost(ch)
}

// SplitBatches splits items (provider.Change for ApplyChanges, provider.Deletion for a zone's
// drain) into write requests that respect c, keeping their order and never splitting one item:
//   - without c.BatchWrites every item is its own request;
//   - otherwise a request holds at most c.MaxChangesPerBatch ResourceRecord
//     elements and c.MaxValueBytesPerBatch value characters (0 = no limit),
//     each item counted by cost (nil = ItemCost: ChangeCost for a Change,
//     DeletionCost for a Deletion).
//
// An item that alone exceeds a limit gets a request of its own (the backend
// will reject it; splitting it would break its atomicity). The result shares
// the values of the input; nil or empty input gives nil.
//
// The guard (pkg/provider/guard) is its one caller: a Provider's ApplyChanges and
// ZoneDrainer.DeleteRecordSets send one request and never split again.
func SplitBatches[T any](items []T, c Capabilities, cost func(T) (elements, valueBytes int)) [][]T {
	if len(items) == 0 {
		return nil
	}
	if !c.BatchWrites {
		out := make([][]T, 0, len(items))
		for i := range items {
			out = append(out, items[i:i+1:i+1])
		}
		return out
	}
	if cost == nil {
		cost = ItemCost[T]
	}
	var (
		out          [][]T
		start        int
		elems, bytes int
	)
	for i, it := range items {
		e, b := cost(it)
		overElems := c.MaxChangesPerBatch > 0 && elems+e > c.MaxChangesPerBatch
		overBytes := c.MaxValueBytesPerBatch > 0 && bytes+b > c.MaxValueBytesPerBatch
		if i > start && (overElems || overBytes) {
			out = append(out, items[start:i:i])
			start, elems, bytes = i, 0, 0
		}
		elems += e
		bytes += b
	}
	return append(out, items[start:len(items):len(items)])
}

// ItemCost is SplitBatches' default cost: ChangeCost for a Change, DeletionCost for a Deletion,
// and one element without value characters for anything else.
func ItemCost[T any](it T) (elements, valueBytes int) {
	switch v := any(it).(type) {
	case Change:
		return ChangeCost(v)
	case Deletion:
		return DeletionCost(v)
	}
	return 1, 0
}

// ChangeCost returns what one change costs against Capabilities' per-request limits: the number
// of ResourceRecord elements and the value characters (ValueBytes). A Create costs After, a
// Delete Before, and an Update Before plus After: every provider here writes an Update as a
// deletion of Before and an addition of After (Route 53's exact DELETE+CREATE, Cloud DNS's
// deletions and additions, RFC 2136's prerequisite and delete plus add). Malformed changes cost
// what their present sides cost.
func ChangeCost(ch Change) (elements, valueBytes int) {
	switch ch.Action {
	case ActionCreate:
		return SetCost(ch.After)
	case ActionDelete:
		return SetCost(ch.Before)
	case ActionUpdate:
		ae, ab := SetCost(ch.After)
		be, bb := SetCost(ch.Before)
		return ae + be, ab + bb
	}
	return 0, 0
}

// SetCost is what one side of a change costs: max(1, len(rs.Targets)) ResourceRecord elements
// (an alias or an empty set is still one element) and the ValueBytes of its targets; 0, 0 for nil.
func SetCost(rs *RecordSet) (elements, valueBytes int) {
	if rs == nil {
		return 0, 0
	}
	n := 0
	for _, t := range rs.Targets {
		n += ValueBytes(rs.Type, t)
	}
	return max(1, len(rs.Targets)), n
}

// ValueBytes is the length of one target as zone-file style APIs spell it in a request (RFC
// 1035 §5.1 presentation form, the form Route 53 and Cloud DNS count against their per-request
// character limits; see PresentationValue):
//   - TXT (and SPF) values are split into 255-byte character-strings, each quoted, with '"' and
//     '\' escaped (2 characters), bytes outside printable ASCII escaped as \ddd (4 characters,
//     Route 53's octal and Cloud DNS's decimal alike), and the strings separated by one space;
//   - other types are their canonical form (CanonicalTarget; the target as given when it does
//     not parse), names in CNAME, NS, PTR and DNAME targets and the host of MX and SRV absolute
//     with their trailing dot.
//
// It is never below what those APIs count, so that a batch of SplitBatches is one request there.
func ValueBytes(rtype, target string) int {
	rtype = strings.ToUpper(rtype)
	if rtype != "TXT" && rtype != "SPF" {
		if c, err := CanonicalTarget(rtype, target); err == nil {
			target = c
		}
		return len(PresentationValue(rtype, target, nil))
	}
	chunks := SplitTXT(target)
	n := len(chunks) - 1 // separating spaces
	for _, c := range chunks {
		n += 2 + len(c)
		for i := 0; i < len(c); i++ {
			switch b := c[i]; {
			case b == '"' || b == '\\':
				n++
			case b < ' ' || b > '~':
				n += 3
			}
		}
	}
	return n
}
