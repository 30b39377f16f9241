from .cli import main

if __name__ == "__main__":  # not when a worker process imports it as __mp_main__
    main()
