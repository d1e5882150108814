//go:build !race

package controllers_test

// scaleObjects is the scale test's object count; the race detector's slowdown makes it smaller.
const scaleObjects = 1000

// scaleObjectsPerWrite is the least average number of objects per provider write in the scale
// test.
const scaleObjectsPerWrite = 4
