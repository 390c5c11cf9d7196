package tensor

// NearestIntForTest exposes nearestInt to the external tests.
var NearestIntForTest = nearestInt
