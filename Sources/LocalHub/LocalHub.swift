// LocalHub: the embedded hub server.
