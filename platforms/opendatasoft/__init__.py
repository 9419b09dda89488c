"""OpenDataSoft: a portal's dataset catalog (the Explore API v2.1), mapped to the udata dataset record."""
