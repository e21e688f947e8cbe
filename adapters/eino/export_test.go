package einoguard

// SealForTest seals a saved state's JSON object as Save does, for tests
// that write state by hand.
var SealForTest = seal
