"""apis"""
