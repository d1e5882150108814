package geo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The provider-specific labels that mark a record set as one geo tag's answer under the geo
// strategy (docs/design.md, "Geo answers"). The Gslb controller writes them as
// endpoint providerSpecific properties; the local provider keeps them as the zonedb set's
// Labels; the embedded server reads them.
const (
	// LabelTag is the geo tag whose clients the set answers; its presence makes a geo set.
	LabelTag = "dnsplane.io/geo-tag"
	// LabelRegions holds the region keys mapped to the tag, sorted and space-separated; when
	// longer than MaxLabelValue, the rest continues in LabelRegions+".1" up to ".13".
	LabelRegions = "dnsplane.io/geo-regions"
	// LabelDefault is "true" on the default geo tag's set.
	LabelDefault = "dnsplane.io/geo-default"
	// MaxLabelValue is the longest label value, in bytes: a providerSpecific value's bound.
	MaxLabelValue = 1024
	// maxRegionLabels is how many LabelRegions values a set carries at most (providerSpecific
	// holds 16 entries; the tag takes one, and the default flag would take another).
	maxRegionLabels = 14
)

// Set is one geo tag's record set as the labels describe it.
type Set struct {
	// Tag is the geo tag.
	Tag string
	// Regions are the region keys that map to Tag, sorted.
	Regions []string
	// Default: Tag is the defaultGeoTag, answering clients that match no region.
	Default bool
}

// EncodeLabels returns the labels of s, in the order to write them (the tag, the default flag,
// then the regions' values). Regions are sorted and space-separated, split at region
// boundaries into values of at most MaxLabelValue bytes. An error when they need more than
// 14 values (14 KiB; 256 regions take at most 11 KiB).
func EncodeLabels(s Set) ([][2]string, error) {
	out := [][2]string{{LabelTag, s.Tag}}
	if s.Default {
		out = append(out, [2]string{LabelDefault, "true"})
	}
	regions := slices.Clone(s.Regions)
	slices.Sort(regions)
	var chunks []string
	var cur strings.Builder
	for _, r := range regions {
		if cur.Len() > 0 && cur.Len()+1+len(r) > MaxLabelValue {
			chunks = append(chunks, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(r)
	}
	if cur.Len() > 0 {
		chunks = append(chunks, cur.String())
	}
	if len(chunks) > maxRegionLabels {
		return nil, fmt.Errorf("geo tag %q: %d regions need %d labels of %d bytes, more than %d", s.Tag, len(regions), len(chunks), MaxLabelValue, maxRegionLabels)
	}
	for i, c := range chunks {
		out = append(out, [2]string{regionLabel(i), c})
	}
	return out, nil
}

func regionLabel(i int) string {
	if i == 0 {
		return LabelRegions
	}
	return LabelRegions + "." + strconv.Itoa(i)
}

// DecodeLabels reads a set's labels: ok is false when the set is no geo set (no LabelTag).
// Each region key is checked with ParseRegion; an invalid one is an error, as is an empty tag.
func DecodeLabels(labels map[string]string) (s Set, ok bool, err error) {
	tag, ok := labels[LabelTag]
	if !ok {
		return Set{}, false, nil
	}
	if tag == "" {
		return Set{}, true, fmt.Errorf("geo set with an empty %s", LabelTag)
	}
	s = Set{Tag: tag, Default: labels[LabelDefault] == "true"}
	for i := 0; i < maxRegionLabels; i++ {
		v, has := labels[regionLabel(i)]
		if !has {
			break
		}
		for _, r := range strings.Fields(v) {
			if _, err := ParseRegion(r); err != nil {
				return Set{}, true, fmt.Errorf("geo tag %q: %w", tag, err)
			}
			s.Regions = append(s.Regions, r)
		}
	}
	slices.Sort(s.Regions)
	return s, true, nil
}
