package geo

import (
	"maps"
	"slices"
)

// Tags returns the geo tags a geo strategy answers with: every value of regions and
// defaultTag, sorted and unique.
func Tags(regions map[string]string, defaultTag string) []string {
	tags := slices.Collect(maps.Values(regions))
	tags = append(tags, defaultTag)
	slices.Sort(tags)
	return slices.Compact(tags)
}

// Resolve returns, for every tag of Tags(regions, defaultTag), the targets its clients get by
// the fallback order (docs/design.md, "Geo answers"):
//  1. the tag's own healthy targets;
//  2. else defaultTag's;
//  3. else every tag's healthy targets together (named in regions or not), sorted and unique.
//
// healthy maps each geo tag to its healthy targets (a tag with none may be missing). A tag
// gets nil only when no tag has a healthy target; the caller then applies the never-empty rule
// (docs/design.md, "Health and partitions"). Pure.
func Resolve(regions map[string]string, defaultTag string, healthy map[string][]string) map[string][]string {
	var every []string
	for _, ts := range healthy {
		every = append(every, ts...)
	}
	slices.Sort(every)
	every = slices.Compact(every)
	out := map[string][]string{}
	for _, tag := range Tags(regions, defaultTag) {
		switch {
		case len(healthy[tag]) > 0:
			out[tag] = sorted(healthy[tag])
		case len(healthy[defaultTag]) > 0:
			out[tag] = sorted(healthy[defaultTag])
		case len(every) > 0:
			out[tag] = slices.Clone(every)
		default:
			out[tag] = nil
		}
	}
	return out
}

func sorted(ts []string) []string {
	c := slices.Clone(ts)
	slices.Sort(c)
	return slices.Compact(c)
}
