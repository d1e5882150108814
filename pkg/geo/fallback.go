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
//  3. else those of the first tag, in tag order, that has healthy targets (named in regions or
//     not): one tag's set, never a union of several tags'.
//
// healthy maps each geo tag to its healthy targets (a tag with none may be missing), all of one
// address family: the caller resolves each family on its own, so that a tag without targets of
// one family falls back for that family alone. A tag gets nil only when no tag has a healthy
// target; the caller then applies the never-empty rule (docs/design.md, "Health and
// partitions"). Pure.
func Resolve(regions map[string]string, defaultTag string, healthy map[string][]string) map[string][]string {
	var first []string
	for _, tag := range slices.Sorted(maps.Keys(healthy)) {
		if len(healthy[tag]) > 0 {
			first = sorted(healthy[tag])
			break
		}
	}
	out := map[string][]string{}
	for _, tag := range Tags(regions, defaultTag) {
		switch {
		case len(healthy[tag]) > 0:
			out[tag] = sorted(healthy[tag])
		case len(healthy[defaultTag]) > 0:
			out[tag] = sorted(healthy[defaultTag])
		default:
			out[tag] = slices.Clone(first)
		}
	}
	return out
}

func sorted(ts []string) []string {
	c := slices.Clone(ts)
	slices.Sort(c)
	return slices.Compact(c)
}
