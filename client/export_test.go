package client

// ResponseID exposes responseID to the external tests.
var ResponseID = responseID
