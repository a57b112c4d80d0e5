"""The admin client's APIs: topics, configs, ACLs, client quotas, SCRAM users, partition
reassignments, leader elections, and DescribeCluster and DescribeLogDirs."""
