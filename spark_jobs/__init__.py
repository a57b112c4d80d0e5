"""Spark jobs over scraped broker metrics; they share only the metrics schema."""
