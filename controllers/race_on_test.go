//go:build race

package controllers_test

// scaleObjects is the scale test's object count, smaller under the race detector's slowdown.
const scaleObjects = 200
