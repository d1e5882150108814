//go:build !race

package controllers_test

// scaleObjects is the scale test's object count; the race detector's slowdown makes it smaller.
const scaleObjects = 1000
