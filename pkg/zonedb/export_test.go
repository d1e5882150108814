package zonedb

// What the tests outside the package (package zonedb_test, which may import zonedbtest and so
// build on its example store) read of a version's or store's internals.

// SetCount is how many record sets, the SOA aside, version v holds.
func SetCount(v ZoneVersion) int { return len(v.z.sets) }

// SetSerial overwrites the SOA serial of version v in place (v must be a test's own).
func SetSerial(v ZoneVersion, serial uint32) { v.z.soa.Serial = serial }
