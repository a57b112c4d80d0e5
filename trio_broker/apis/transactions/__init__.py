"""The transaction APIs: InitProducerId, a transactional producer's requests to its
coordinator, and WriteTxnMarkers."""
