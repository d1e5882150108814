package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// IDLength is the length of a plan ID in hex characters (80 bits of
// sha256).
const IDLength = 20

// ID returns the plan ID: IDLength lower-case hex characters of
// sha256(the planned record changes, spec). records are Result.Records;
// spec is the caller's serialised spec WITHOUT approvedPlan, so that
// approving a plan does not change its ID and a changed spec never matches an
// old approval (dnsplane API contract, "Plan IDs").
//
// The ID depends on what the changes do, not on how they are spelled: the
// order of the changes, of targets within a set and of ProviderSpecific
// entries does not matter. Each change contributes its action, its Before
// (so that an approval does not carry over to a zone that changed
// underneath) and its After. No changes and the same spec give the same ID.
func ID(records []provider.Change, spec []byte) string {
	lines := make([]string, len(records))
	for i, c := range records {
		lines[i] = string(c.Action) + " " + setString(c.Before) + " -> " + setString(c.After)
	}
	slices.Sort(lines)
	h := sha256.New()
	write := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	write([]byte("dnsplane plan v1"))
	write([]byte(strconv.Itoa(len(lines))))
	for _, l := range lines {
		write([]byte(l))
	}
	write(spec)
	return hex.EncodeToString(h.Sum(nil))[:IDLength]
}

// setString is an unambiguous, order-independent spelling of a set.
func setString(rs *provider.RecordSet) string {
	if rs == nil {
		return "-"
	}
	q := strconv.Quote
	var b strings.Builder
	b.WriteString(q(rs.Name) + " " + q(rs.Type) + " " + q(rs.SetIdentifier) + " ttl=" + strconv.FormatInt(rs.TTL, 10))
	if rs.Weight != nil {
		b.WriteString(" weight=" + strconv.FormatInt(*rs.Weight, 10))
	}
	targets := slices.Clone(rs.Targets)
	slices.Sort(targets)
	for _, t := range targets {
		b.WriteString(" " + q(t))
	}
	for _, k := range slices.Sorted(maps.Keys(rs.ProviderSpecific)) {
		b.WriteString(" " + q(k) + "=" + q(rs.ProviderSpecific[k]))
	}
	return b.String()
}
