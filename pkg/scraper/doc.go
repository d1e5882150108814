// Package scraper is the nameserver scraper of the managed-DNS flow (Hive's nameServerScraper,
// improved): one scrape loop per parent zone that has registered children. A scrape lists the
// parent's record sets once through its zone writer (which refreshes the writer's view too),
// caches the NS set of every subdomain, and notifies:
//   - the DNSZone controller when a registered child's delegation became or stopped being exactly
//     its wanted NS set (ParentLinkCreated);
//   - the DNSEndpoint controller, for the child's parent-link object, when the parent's NS set
//     differs from the wanted one, so the link is re-published (repair after tampering).
//
// Parents are scraped at start-up (first registration), every interval, and at once when a new
// child registers or a child's wanted set changes. Failed scrapes back off exponentially through
// a client-go workqueue rate limiter. Notifications are the scraper's own Notice values, on
// buffered channels; it must not import the API types or controller-runtime's events (the
// controllers adapt Notices to their work queues), and it must not write to the provider.
package scraper
