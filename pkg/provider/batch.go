package provider

import "strings"

// SplitBatches splits changes into write requests that respect c, keeping
// their order and never splitting one Change:
//   - without c.BatchWrites every change is its own request;
//   - otherwise a request holds at most c.MaxChangesPerBatch ResourceRecord
//     elements and c.MaxValueBytesPerBatch value characters (0 = no limit),
//     counted by ChangeCost.
//
// A change that alone exceeds a limit gets a request of its own (the backend
// will reject it; splitting it would break its atomicity). The result shares
// the Change values of the input; nil or empty input gives nil.
func SplitBatches(changes []Change, c Capabilities) [][]Change {
	if len(changes) == 0 {
		return nil
	}
	if !c.BatchWrites {
		out := make([][]Change, 0, len(changes))
		for i := range changes {
			out = append(out, changes[i:i+1:i+1])
		}
		return out
	}
	var (
		out          [][]Change
		start        int
		elems, bytes int
	)
	for i, ch := range changes {
		e, b := ChangeCost(ch, c)
		overElems := c.MaxChangesPerBatch > 0 && elems+e > c.MaxChangesPerBatch
		overBytes := c.MaxValueBytesPerBatch > 0 && bytes+b > c.MaxValueBytesPerBatch
		if i > start && (overElems || overBytes) {
			out = append(out, changes[start:i:i])
			start, elems, bytes = i, 0, 0
		}
		elems += e
		bytes += b
	}
	return append(out, changes[start:len(changes):len(changes)])
}

// ChangeCost returns what one change costs against c's per-request limits:
// the number of ResourceRecord elements and the value characters (ValueBytes).
// A set contributes at least one element even with no targets (an alias or
// an empty set is still one element). An Update costs Before plus After, or
// twice After under c.UpsertCountsTwice (Route 53's UPSERT accounting).
func ChangeCost(ch Change, c Capabilities) (elements, valueBytes int) {
	set := func(rs *RecordSet) (int, int) {
		if rs == nil {
			return 0, 0
		}
		n := 0
		for _, t := range rs.Targets {
			n += ValueBytes(rs.Type, t)
		}
		return max(1, len(rs.Targets)), n
	}
	switch ch.Action {
	case ActionCreate:
		return set(ch.After)
	case ActionDelete:
		return set(ch.Before)
	case ActionUpdate:
		ae, ab := set(ch.After)
		if c.UpsertCountsTwice {
			return 2 * ae, 2 * ab
		}
		be, bb := set(ch.Before)
		return ae + be, ab + bb
	}
	return 0, 0
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
