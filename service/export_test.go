package service

// Patterns are the routes s registered, for tests.
func Patterns(s *Service) []string { return s.patterns }
