//go:build race

package controllers_test

// scaleObjects is the scale test's object count, smaller under the race detector's slowdown.
const scaleObjects = 200

// scaleObjectsPerWrite is the least average number of objects per provider write in the scale
// test; small zones under the race detector batch less.
const scaleObjectsPerWrite = 2
